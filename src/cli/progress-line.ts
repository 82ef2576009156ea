import { displayWidth, fitToColumns } from "./display-width.js";

/**
 * One progress line on standard error, shared by the pipe and run. Where the
 * terminal can redraw, the line is redrawn in place five times a second;
 * where it cannot (not a terminal, TERM=dumb, a terminal that reports no
 * width), a plain line is printed once a second, so a log or a dumb terminal
 * still sees the figures move. The line always fits the width: fields are
 * dropped in a fixed order (fitFields), then those that still do not fit.
 */

/** A field of the line; fields with a `dropRank` go, lowest rank first, until the line fits. */
export interface ProgressField {
  text: string;
  dropRank?: number;
  /**
   * The most columns the text can take as its figure changes (`1023.99 KiB/s`
   * for a rate): which fields fit is decided from it, so that a field does not
   * come and go from one redraw to the next as another's text changes width.
   * With an empty text it keeps the room of a field that comes and goes itself.
   */
  widest?: number;
}

/** Why a field may go, in the order they go: pv drops its bar first; we drop what a user needs least. */
export const DROP = { average: 1, bucket: 2, limit: 3, elapsed: 4, percentage: 5, secondary: 6 } as const;

const SEPARATOR = "  ";

/**
 * The fields joined, without the droppable ones that do not fit `width`; then
 * only the whole fields that fit. What fits is measured on each field's widest.
 */
export function fitFields(fields: readonly ProgressField[], width: number, separator = SEPARATOR): string {
  const span = (some: readonly ProgressField[]) =>
    some.reduce((columns, field) => columns + Math.max(field.widest ?? 0, field.text.length), 0) + separator.length * Math.max(0, some.length - 1);
  const join = (some: readonly ProgressField[]) =>
    some
      .filter((field) => field.text !== "")
      .map((field) => field.text)
      .join(separator);
  let kept = fields;
  const ranks = [...new Set(fields.flatMap((field) => (field.dropRank === undefined ? [] : [field.dropRank])))].sort((a, b) => a - b);
  for (const rank of ranks) {
    if (span(kept) <= width) break;
    kept = kept.filter((field) => field.dropRank !== rank);
  }
  if (span(kept) <= width) return join(kept);
  // Whole fields only, in order, each that still fits: a figure cut short ("144.05 K" of 144.05 KiB/s,
  // "1" of 144.05) reads as another figure. The first is cut only if none fits.
  const fitted: ProgressField[] = [];
  for (const field of kept) {
    if (span([...fitted, field]) <= width) fitted.push(field);
  }
  const line = join(fitted);
  return line !== "" ? line : (kept[0]?.text ?? "").slice(0, Math.max(0, width));
}

/** How the line is shown: redrawn in place, or a plain line a second. */
export type ProgressStyle = "redraw" | "plain";

export function progressStyle(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv): ProgressStyle {
  return stream.isTTY && stream.columns > 0 && env.TERM !== "dumb" ? "redraw" : "plain";
}

/**
 * The columns a line may take: the terminal's width less one (a line that
 * fills the last column wraps on some terminals), or COLUMNS's elsewhere, or no limit.
 */
export function progressWidth(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv): number {
  const columns = stream.isTTY && stream.columns > 0 ? stream.columns : Number(env.COLUMNS);
  return Number.isInteger(columns) && columns > 1 ? columns - 1 : Infinity;
}

/** A row of a block of progress lines that several named processes share on one terminal (progress-rows.ts). */
export interface ProgressRow {
  /** This row's place: rows up from the line below the block; undefined while another process is making its row. */
  rowsUp(): number | undefined;
  /** The place for the last line: waits (briefly) for a process making its row. */
  finalRowsUp(): number;
  leave(): void;
}

export interface ProgressLineOptions {
  stream: NodeJS.WriteStream;
  env: NodeJS.ProcessEnv;
  /** Prefixes the line (`-N`), as pv's name does. */
  name?: string;
  /** Set for a named process on a terminal that redraws: its line keeps a row of its own. */
  row?: ProgressRow;
  /** The line's text in at most `width` columns. */
  describe(width: number): string;
}

export interface ProgressLine {
  /** Clears the line before other output to the same terminal (draw puts it back). */
  clear(): void;
  draw(): void;
  /** Draws the line a last time and leaves it on the screen. */
  stop(): void;
}

/** A name takes at most this share of the line, or these many columns on a very narrow one. */
const NAME_SHARE = 1 / 3;
const MIN_NAME_COLUMNS = 8;

export const REDRAW_MS = 200;
export const PLAIN_LINE_MS = 1000;

const ERASE_TO_END = "\x1b[K";
const SAVE_CURSOR = "\x1b7";
const RESTORE_CURSOR = "\x1b8";

/** Starts drawing the line on its stream; stop() ends it. */
export function startProgressLine(options: ProgressLineOptions): ProgressLine {
  const { stream, env } = options;
  // Progress that cannot be shown (standard error full or closed) is no reason to fail the work.
  stream.on("error", () => {});
  const style = progressStyle(stream, env);
  // A name's control characters (a newline, an escape, C1's CSI) would break the line: shown as "?".
  const name = options.name?.replace(/[\x00-\x1f\x7f-\x9f]/g, "?");
  const text = () => {
    const width = progressWidth(stream, env);
    if (name === undefined) return options.describe(width).slice(0, width);
    // A long name leaves the figures most of the line; its width in columns, not characters (日本, emoji).
    const prefix = `${fitToColumns(name, Math.max(MIN_NAME_COLUMNS, Math.floor(width * NAME_SHARE)))}: `;
    const used = displayWidth(prefix);
    return used > width ? fitToColumns(prefix, width) : prefix + options.describe(width - used).slice(0, width - used);
  };
  const row = style === "redraw" ? options.row : undefined;
  let stopped = false;
  // Cleared for other output to the same terminal, until draw(): the timer must not cover a part of a line.
  let cleared = false;
  const write = (data: string) => {
    if (!stream.destroyed) stream.write(data);
  };
  const draw = (last = false) => {
    if (stopped) return;
    if (style === "plain") return write(`${text()}\n`);
    if (!row) return write(`\r${text()}${ERASE_TO_END}`);
    const rowsUp = last ? row.finalRowsUp() : row.rowsUp();
    if (rowsUp === undefined) return;
    // One write: the terminal takes it whole, so another process's row cannot come between.
    write(`${SAVE_CURSOR}\x1b[${rowsUp}A\r${text()}${ERASE_TO_END}${RESTORE_CURSOR}`);
  };
  if (style === "redraw") draw();
  const timer = setInterval(() => {
    if (!cleared || style === "plain") draw();
  }, style === "plain" ? PLAIN_LINE_MS : REDRAW_MS);
  timer.unref();
  return {
    clear() {
      if (style !== "redraw" || row || stopped || cleared) return;
      cleared = true;
      write(`\r${ERASE_TO_END}`);
    },
    draw: () => {
      cleared = false;
      if (style === "redraw") draw();
    },
    stop() {
      if (stopped) return;
      clearInterval(timer);
      // Still cleared, the cursor may be after a part of a line of output: the last line goes below it.
      const start = cleared ? "\n" : "\r";
      if (style === "plain" || !row) write(style === "plain" ? `${text()}\n` : `${start}${text()}${ERASE_TO_END}\n`);
      else draw(true);
      stopped = true;
      row?.leave();
    },
  };
}
