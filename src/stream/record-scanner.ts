/** Where a slice of a chunk ends, and how many records start in it. */
export interface RecordSlice {
  end: number;
  /** Records that start in the slice (a record carried over from the chunk before does not count again). */
  records: number;
}

/**
 * RecordScanner finds record boundaries (a delimiter byte, `\n` or NUL) in a
 * stream that arrives in chunks, so slices can end between records instead of
 * splitting one. It remembers across chunks whether a record is open, so a
 * record split by a read is counted once.
 */
export class RecordScanner {
  readonly delimiter: number;
  #inRecord = false;

  constructor(delimiter: number) {
    this.delimiter = delimiter;
  }

  /** Up to `maxRecords` record starts from `start`; the rest of a record already started comes with it, free. */
  recordsFrom(chunk: Buffer, start: number, maxRecords: number): RecordSlice {
    let position = start;
    let records = 0;
    while (position < chunk.length) {
      if (!this.#inRecord) {
        if (records === maxRecords) break;
        records++;
        this.#inRecord = true;
      }
      const next = chunk.indexOf(this.delimiter, position);
      if (next === -1) {
        position = chunk.length;
        break;
      }
      position = next + 1;
      this.#inRecord = false;
    }
    return { end: position, records };
  }

  /**
   * Whole records from `start` up to `maxBytes`, and at most `maxRecords`
   * record starts; a single longer record goes whole, as far as the chunk
   * holds it.
   */
  wholeRecordsFrom(chunk: Buffer, start: number, maxBytes: number, maxRecords = Infinity): RecordSlice {
    const limit = Math.min(chunk.length, start + maxBytes);
    let end = start;
    let records = 0;
    for (;;) {
      const next = chunk.indexOf(this.delimiter, end);
      if (next === -1 || next + 1 > limit) break;
      if (!this.#inRecord && records >= maxRecords) break;
      if (!this.#inRecord) records++;
      this.#inRecord = false;
      end = next + 1;
    }
    if (end === start) {
      // No whole record fits: through the end of the first record, or the chunk.
      const next = chunk.indexOf(this.delimiter, start);
      if (!this.#inRecord) records++;
      end = next === -1 ? chunk.length : next + 1;
      this.#inRecord = next === -1;
    }
    return { end, records };
  }

  /** Counts the records that start in `segment`: at its first byte unless one is open, and after every delimiter. */
  countStarts(segment: Buffer): number {
    let records = 0;
    let position = 0;
    while (position < segment.length) {
      if (!this.#inRecord) {
        records++;
        this.#inRecord = true;
      }
      const next = segment.indexOf(this.delimiter, position);
      if (next === -1) break;
      this.#inRecord = false;
      position = next + 1;
    }
    return records;
  }
}
