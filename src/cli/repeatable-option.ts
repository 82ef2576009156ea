import { Option } from "commander";

/** Options given more than once on purpose (each value kept), for completion to offer again. */
const repeatable = new WeakSet<Option>();

/** An option whose every value is kept, in order, by `collect`: `--rate 100/s --rate 64kb`. */
export function repeatableOption<T>(flags: string, description: string, collect: (value: string, previous: T[] | undefined) => T[]): Option {
  const option = new Option(flags, description).argParser(collect);
  repeatable.add(option);
  return option;
}

/** Whether `option` may be given more than once: variadic, or made by repeatableOption. */
export function isRepeatable(option: Option): boolean {
  return option.variadic || repeatable.has(option);
}

/** Keeps every value of a repeatable option, in order. */
export function collectText(text: string, previous: string[] = []): string[] {
  return [...previous, text];
}
