/**
 * Thrown for store text that names no store, or names one wrongly; the
 * message quotes the text and says what to write instead.
 */
export class StoreUrlError extends RangeError {
  readonly code = "ESTOREURL";
  constructor(text: string, why?: string, fix?: string) {
    super(
      why === undefined
        ? `"${text}" is not a store; try "sqlite:", "sqlite:/path/buckets.db" or "redis://host:6379"`
        : `"${text}": ${why}; ${fix}`,
    );
    this.name = "StoreUrlError";
  }
}
