/**
 * Quotes text for /bin/sh so that it is one word, taken literally: inside
 * single quotes nothing is special, and a single quote itself is written as
 * '\'' (close, escaped quote, reopen). `$(touch pwned); rm -rf x` stays text.
 */
export function shellQuote(text: string): string {
  if (/^[\w@%+=:,./-]+$/.test(text)) return text;
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
