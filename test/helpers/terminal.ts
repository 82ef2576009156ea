import { type CliResult, start, TBUCKET } from "./cli.js";

/**
 * Runs a bash script in a pseudo-terminal of `columns` columns (script(1)),
 * for what tbucket does only on a terminal. The script runs `tbucket` as a
 * shell function, and reads paths from the environment (`"$IN"`), never
 * pasted into its text. What comes back on standard output is what the
 * terminal received, the bytes a screen would draw (see drawScreen).
 */
export function runInTerminal(script: string, options: { columns?: number; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<CliResult> {
  const setup = `stty cols ${options.columns ?? 80} rows 24; tbucket() { "$TBUCKET_NODE" "$TBUCKET_BIN" "$@"; }; `;
  return start("script", ["-qefc", `bash -c '${setup}${script.replaceAll("'", `'\\''`)}'`, "/dev/null"], {
    env: { TERM: "xterm", TBUCKET_NODE: process.execPath, TBUCKET_BIN: TBUCKET, ...options.env },
    timeoutMs: options.timeoutMs,
  }).exited;
}

/**
 * The screen a terminal of `columns` would show after `bytes`: printable
 * characters (wrapping at the last column, as terminals do), carriage
 * return, newline, and the few escapes tbucket uses: erase to the end of
 * the line (ESC [ K), cursor up (ESC [ n A), to a column (ESC [ n G), save and restore the cursor
 * (ESC 7, ESC 8). Other escapes are skipped. Rows are trimmed at the end.
 */
export function drawScreen(bytes: string, columns: number): string[] {
  const rows: string[][] = [[]];
  let row = 0;
  let column = 0;
  let saved = { row: 0, column: 0 };
  const line = () => (rows[row] ??= []);
  for (let at = 0; at < bytes.length; at++) {
    const char = bytes[at]!;
    if (char === "\x1b") {
      const csi = /^\x1b\[([0-9;?]*)([A-Za-z])/.exec(bytes.slice(at, at + 16));
      if (csi) {
        if (csi[2] === "K") line().length = Math.min(line().length, column);
        if (csi[2] === "A") row = Math.max(0, row - Number(csi[1] || 1));
        // To a column (ora's spinner redraws from column 1).
        if (csi[2] === "G") column = Math.max(0, Number(csi[1] || 1) - 1);
        at += csi[0].length - 1;
      } else if (bytes[at + 1] === "7" || bytes[at + 1] === "8") {
        if (bytes[at + 1] === "7") saved = { row, column };
        else ({ row, column } = saved);
        at += 1;
      }
    } else if (char === "\r") {
      column = 0;
    } else if (char === "\n") {
      row++;
    } else if (char >= " ") {
      if (column >= columns) {
        row++;
        column = 0;
      }
      const cells = line();
      while (cells.length < column) cells.push(" ");
      cells[column++] = char;
    }
  }
  return Array.from(rows, (cells) => (cells ?? []).join("").trimEnd());
}
