/**
 * Thrown for store text that names no store, or names one wrongly; the
 * message quotes the text and says what to write instead.
 */
export class StoreUrlError extends RangeError {
  readonly code = "ESTOREURL";
  /** The text as quoted (a password hidden). */
  readonly text: string;
  /** The text names no store at all (rather than one written wrongly): the registry says which it knows. */
  readonly notAStore: boolean;
  /** Without `why`: the text is not a store, and `fix` (when given) lists what is. */
  constructor(text: string, why?: string, fix?: string) {
    super(why === undefined ? `"${text}" is not a store${fix === undefined ? "" : `; ${fix}`}` : `"${text}": ${why}; ${fix}`);
    this.name = "StoreUrlError";
    this.text = text;
    this.notAStore = why === undefined;
  }
}
