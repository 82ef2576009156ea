/** One job to run: its number (from 1) and, when jobs come from input lines, its item. */
export interface JobSpec {
  readonly number: number;
  readonly item: string | undefined;
}

/**
 * The lines of a byte stream, read only as they are asked for: the stream's
 * own async iterator pulls one chunk at a time, so a million lines cost the
 * memory of one chunk, not of the whole input. Every line is an item, the
 * empty ones too (as in GNU parallel); a missing final newline is forgiven.
 */
export async function* readLines(input: AsyncIterable<Buffer | string>): AsyncGenerator<string> {
  let partial = "";
  const decoder = new TextDecoder("utf-8");
  for await (const chunk of input) {
    const text = partial + (typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true }));
    let start = 0;
    for (let end = text.indexOf("\n"); end !== -1; end = text.indexOf("\n", start)) {
      yield text.slice(start, end);
      start = end + 1;
    }
    partial = text.slice(start);
  }
  partial += decoder.decode();
  if (partial !== "") yield partial;
}

export interface JobSourceOptions {
  /** Items, one job each; absent: jobs without items. */
  items?: AsyncIterable<string>;
  /** At most this many jobs; Infinity: until the items end, or forever without items. */
  count: number;
}

/** Numbers the jobs: one per item, or `count` of them, or endlessly. */
export async function* jobSource(options: JobSourceOptions): AsyncGenerator<JobSpec> {
  let number = 0;
  if (options.items) {
    if (options.count <= 0) return;
    for await (const item of options.items) {
      yield { number: ++number, item };
      if (number >= options.count) return;
    }
    return;
  }
  while (number < options.count) yield { number: ++number, item: undefined };
}
