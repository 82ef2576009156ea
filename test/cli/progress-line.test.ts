import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { PassThrough } from "node:stream";
import { fitFields, progressStyle, progressWidth, startProgressLine } from "../../src/cli/progress-line.js";
import { RateWindow } from "../../src/cli/rate-window.js";
import { displayWidth, fitToColumns } from "../../src/cli/display-width.js";

/** A stand-in for standard error: a terminal of `columns` or not, collecting what is written. */
function fakeStream(columns: number | undefined) {
  const stream = new PassThrough() as unknown as NodeJS.WriteStream & { written: string };
  stream.written = "";
  Object.assign(stream, { isTTY: columns !== undefined, columns: columns ?? 0, write: (data: string) => ((stream.written += data), true) });
  return stream;
}

describe("fitFields", () => {
  it("drops the lowest ranks first, keeps fields without a rank, and cuts only as a last resort", () => {
    const fields = [{ text: "aaaa" }, { text: "bb", dropRank: 2 }, { text: "cc", dropRank: 1 }, { text: "dddd" }];
    expect(fitFields(fields, 100)).toBe("aaaa  bb  cc  dddd");
    expect(fitFields(fields, 14)).toBe("aaaa  bb  dddd");
    expect(fitFields(fields, 10)).toBe("aaaa  dddd");
    expect(fitFields(fields, 6)).toBe("aaaa");
    expect(fitFields(fields, 3)).toBe("aaa");
  });

  // Regression: at 20 columns the line read "29.00 KiB  144.05 K", a figure cut mid-unit.
  it("never cuts a field short: those that fit stay, whole, in their order", () => {
    const fields = [{ text: "29.00 KiB" }, { text: "144.05 KiB/s" }, { text: "bucket 0%", dropRank: 1 }, { text: "ETA 2.6 s" }];
    expect(fitFields(fields, 19)).toBe("29.00 KiB");
    expect(fitFields(fields, 20)).toBe("29.00 KiB  ETA 2.6 s");
    expect(fitFields(fields, 34)).toBe("29.00 KiB  144.05 KiB/s  ETA 2.6 s");
  });

  // Issue 19: the percentage came and went from one redraw to the next as the rate's text changed width.
  it("decides what fits from each field's widest, so a field does not come and go as another's figure changes width", () => {
    const line = (rate: string) => [{ text: "1.09 MiB", widest: 11 }, { text: rate, widest: 13 }, { text: "27.3%", widest: 6, dropRank: 1 }, { text: "ETA 2.9 s" }];
    expect(fitFields(line("1.09 MiB/s"), 39)).toBe("1.09 MiB  1.09 MiB/s  ETA 2.9 s");
    expect(fitFields(line("1022.56 KiB/s"), 39)).toBe("1.09 MiB  1022.56 KiB/s  ETA 2.9 s");
    expect(fitFields(line("1.09 MiB/s"), 45)).toBe("1.09 MiB  1.09 MiB/s  27.3%  ETA 2.9 s");
    // A text wider than its widest is measured as it is: the line still fits.
    expect(fitFields([{ text: "a".repeat(20), widest: 5 }, { text: "b", dropRank: 1 }], 21)).toBe("a".repeat(20));
  });

  it("keeps the room of a field that is away (an empty text) and shows nothing for it", () => {
    const fields = (burst: string) => [{ text: "9.00 MiB/s" }, { text: burst, widest: 7, dropRank: 2 }, { text: "limit 1.00 MiB/s", dropRank: 2 }, { text: "500 ms", dropRank: 1 }];
    expect(fitFields(fields(""), 100)).toBe("9.00 MiB/s  limit 1.00 MiB/s  500 ms");
    expect(fitFields(fields("(burst)"), 100)).toBe("9.00 MiB/s  (burst)  limit 1.00 MiB/s  500 ms");
    for (const width of [37, 44]) expect(fitFields(fields(""), width)).toBe(fitFields(fields("(burst)"), width).replace("  (burst)", ""));
  });
});

describe("RateWindow", () => {
  it("measures over the window asked for, on the samples' own times", () => {
    const window = new RateWindow(5000);
    expect(window.rateOver(1000)).toBe(0);
    for (let ms = 0; ms <= 10_000; ms += 500) window.record(ms, ms <= 6000 ? ms : 6000 + (ms - 6000) * 4);
    expect(window.rateOver(1000)).toBe(4000);
    expect(window.rateOver(5000)).toBe((4000 * 4 + 1000) / 5);
  });
});

describe("the progress line on a terminal and elsewhere", () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it("redraws in place on a terminal, fitted to its width less one", () => {
    const stream = fakeStream(20);
    const line = startProgressLine({ stream, env: { TERM: "xterm" }, describe: (width) => "x".repeat(width + 5) });
    vi.advanceTimersByTime(450);
    line.stop();
    const frame = `\r${"x".repeat(19)}\x1b[K`;
    expect(stream.written).toBe(frame.repeat(3) + `${frame}\n`);
  });

  // Issue 15, point 11: with TERM=dumb, one line at the start and then nothing for 25 s.
  it("prints a plain line a second where the terminal cannot redraw (TERM=dumb, or not a terminal)", () => {
    for (const [stream, env] of [
      [fakeStream(40), { TERM: "dumb" }],
      [fakeStream(undefined), { COLUMNS: "11" }],
    ] as const) {
      let n = 0;
      const line = startProgressLine({ stream, env, name: "in", describe: (width) => `${++n} ${"y".repeat(width)}`.slice(0, width) });
      vi.advanceTimersByTime(3500);
      line.stop();
      const lines = stream.written.split("\n");
      expect(lines.slice(0, -1)).toHaveLength(4);
      expect(stream.written).not.toMatch(/[\r\x1b]/);
      for (const text of lines.slice(0, -1)) expect(text).toMatch(/^in: \d+ y*$/);
      expect(lines[0]!.length).toBe(env.TERM === "dumb" ? 39 : 10);
    }
  });

  it("shows a name's control characters as ?, so that a name cannot break the line", () => {
    const stream = fakeStream(undefined);
    startProgressLine({ stream, env: {}, name: "a\nb\x1b[2J", describe: () => "1 B" }).stop();
    expect(stream.written).toBe("a?b?[2J: 1 B\n");
  });

  // Regression: a 200-character name filled the whole line, and wide characters (日本, emoji) were counted as one column, so the line wrapped.
  it("gives a long name a third of the line at most, counted in columns, cut with …; the figures keep the rest", () => {
    for (const [name, shown] of [
      ["a".repeat(200), `${"a".repeat(12)}…`],
      ["日本語の名前がとても長い🎉", "日本語の名前…"],
      ["名前", "名前"],
    ] as const) {
      const stream = fakeStream(40);
      startProgressLine({ stream, env: { TERM: "xterm" }, name, describe: (width) => "9".repeat(width) }).stop();
      const frame = stream.written.split("\r").at(-2)!.replace("\x1b[K", "");
      expect(frame.startsWith(`${shown}: 9`), frame).toBe(true);
      expect(displayWidth(frame)).toBe(39);
    }
  });

  it("shows C1 control characters of a name (CSI, U+009B) as ? too", () => {
    const stream = fakeStream(undefined);
    startProgressLine({ stream, env: {}, name: "a\u009b2Jb", describe: () => "1 B" }).stop();
    expect(stream.written).toBe("a?2Jb: 1 B\n");
  });

  it("knows which terminals redraw, and their width", () => {
    expect(progressStyle(fakeStream(80), { TERM: "xterm" })).toBe("redraw");
    expect(progressStyle(fakeStream(80), { TERM: "dumb" })).toBe("plain");
    expect(progressStyle(fakeStream(0), {})).toBe("plain");
    expect(progressStyle(fakeStream(undefined), {})).toBe("plain");
    expect(progressWidth(fakeStream(80), { COLUMNS: "40" })).toBe(79);
    expect(progressWidth(fakeStream(undefined), { COLUMNS: "40" })).toBe(39);
    expect(progressWidth(fakeStream(undefined), {})).toBe(Infinity);
  });
});

describe("displayWidth and fitToColumns", () => {
  it("count wide characters as two columns and combining marks as none, and never cut a wide one in half", () => {
    expect(displayWidth("abc")).toBe(3);
    expect(displayWidth("日本")).toBe(4);
    expect(displayWidth("🎉")).toBe(2);
    expect(displayWidth("e\u0301")).toBe(1);
    expect(fitToColumns("日本語", 4)).toBe("日…");
    expect(fitToColumns("日本語", 6)).toBe("日本語");
    expect(fitToColumns("abcdef", 3)).toBe("ab…");
  });
});
