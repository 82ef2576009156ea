import type { Command } from "commander";
import { checkNotMistypedCommand, commandNames, givenWords } from "../mistyped-command.js";
import { addLimitOptions } from "../limit-options.js";
import { addReportOptions } from "../report-options.js";
import { addSharedBucketOptions } from "../shared-options.js";
import { type PipeFlags, parsePipeOptions } from "./options.js";

const EXAMPLES = `
Units: byte rates 1mb = 1mb/s = 1,048,576 B/s (k, m, g, t are binary whatever the case),
10mbit = 1,250,000 B/s (bit units are decimal); count rates 5, 5/s, 300/m, 1/10s.

Examples:
  cat big.iso | tbucket --rate 1mb --burst 4mb > /mnt/slow/big.iso
  tbucket -r 10mbit -p backup.tar | ssh host 'cat > backup.tar'
  tail -f app.log | tbucket --lines --rate 100/s       # at most 100 lines a second
  tail -f app.log | tbucket --lines --rate 100/s --rate 64kb  # 100 lines and 64 KiB a second, both
  tbucket --rate 10mb --window 50gb/d < dump.sql > copy.sql  # 10 MiB/s, and at most 50 GiB in any day
  tbucket --rate inf --progress --stats big.iso > /dev/null
  tbucket --key backups --rate 20mb < dump.sql > copy.sql  # share 20 MiB/s between processes`;

/** Declares `tbucket pipe`, the default command; the copying code loads only when it runs. */
export function registerPipe(program: Command, onExit: (code: number) => void): Command {
  const command = program
    .command("pipe", { isDefault: true })
    .description("copy files or standard input to standard output, no faster than the rate (the default command)")
    .argument("[file...]", "files to read in order; - or none: standard input");
  addLimitOptions(command, {
    rate: "byte rate (1mb, 512k/s, 10mbit, inf); a line rate with --lines (100/s); repeatable: every rate holds",
    burst: "bucket capacity of the rate before it (default: 100 ms of the rate in bytes; 1 line with --lines)",
    window: "at most n in any interval w, sliding and exact: 2mb/1s, 50gb/d (bytes); 1000/h counts lines with --lines; repeatable",
  })
    .option("-l, --lines", "one token per line; lines are never split (with a byte rate: lines cost their bytes)")
    .option("-0, --null", "records end with NUL instead of newline (implies --lines)")
    .option("-s, --size <size>", "expected total bytes, for the percentage and ETA of --progress")
    .option("--force", "write to a terminal even input that looks binary")
    .option("--class <name>", "with --key: take as this class of the key's classes (set by tbucket key set --class)")
    .option("--pipe-size <size>", "capacity to ask for the pipes on standard input and output, up to 1m unprivileged (default: 1m from 50mb/s on, else as they are)");
  addReportOptions(command);
  return addSharedBucketOptions(command)
    .addHelpText("after", EXAMPLES)
    .action(async (files: string[], flags: PipeFlags) => {
      checkNotMistypedCommand(files[0], commandNames(program), givenWords(program));
      const config = parsePipeOptions(files, flags);
      const { runPipe } = await import("./run.js");
      onExit(await runPipe(config));
    });
}
