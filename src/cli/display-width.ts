/**
 * Columns a string takes on a terminal, for text a user gave (a progress
 * line's name): East Asian wide and fullwidth characters and emoji take two,
 * combining marks and joiners none, the rest one. An approximation of
 * wcwidth(3) that needs no table; control characters are the caller's to
 * replace first.
 */
export function displayWidth(text: string): number {
  let columns = 0;
  for (const char of text) columns += charWidth(char);
  return columns;
}

/** `text` cut to at most `columns`, with "…" where it was cut; never half a wide character. */
export function fitToColumns(text: string, columns: number): string {
  if (displayWidth(text) <= columns) return text;
  if (columns <= 0) return "";
  let kept = "";
  let used = 0;
  for (const char of text) {
    const width = charWidth(char);
    if (used + width > columns - 1) break;
    kept += char;
    used += width;
  }
  return `${kept}…`;
}

const ZERO_WIDTH = /^[\p{Mn}\p{Me}\u200b-\u200f\u2060\ufe00-\ufe0f]$/u;
const WIDE = /^[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6\u{1f300}-\u{1f64f}\u{1f900}-\u{1f9ff}\u{20000}-\u{3fffd}]$/u;

function charWidth(char: string): number {
  if (ZERO_WIDTH.test(char)) return 0;
  return WIDE.test(char) ? 2 : 1;
}
