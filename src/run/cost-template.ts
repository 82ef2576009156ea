/**
 * A job's cost from its item (`--cost`, DESIGN 13), one of:
 *
 *   {.max_tokens}   a field of the item read as JSON (a JSONL line); `.a.b` goes
 *                   into objects, a numeric step (`.choices.0`) into arrays
 *   {2}             the 2nd whitespace-separated field of the item, from 1
 *   {}              the whole item
 *   250             the same cost for every job
 *
 * The template is parsed once; each item is then read by `costOf`. A cost
 * is a finite number from 0 to 2^53 - 1 (beyond it, counts are no longer exact);
 * a field written as a JSON string of digits (`"120"`) counts as its number.
 */
export type CostTemplate =
  | { readonly kind: "number"; readonly source: string; readonly value: number }
  | { readonly kind: "item"; readonly source: string }
  | { readonly kind: "field"; readonly source: string; readonly field: number }
  | { readonly kind: "json"; readonly source: string; readonly path: readonly string[] };

/** Why an item has no cost: a stable code, and a message of one line naming the template and what was wrong. */
export type CostErrorCode = "not-json" | "missing" | "not-a-number" | "not-text" | "negative" | "too-large";

/** An item the template cannot take a cost from; the caller adds the item's line. */
export class CostError extends Error {
  readonly code: CostErrorCode;
  constructor(code: CostErrorCode, message: string) {
    super(message);
    this.name = "CostError";
    this.code = code;
  }
}

/**
 * The largest cost: 2^53 - 1, as for every count (src/core/units.ts). 2^53
 * itself is refused: a field written 2^53 + 1 reads as 2^53, so a cost of
 * 2^53 may not be what the item says.
 */
export const MAX_COST = Number.MAX_SAFE_INTEGER;

/** A plain decimal, signed so that `-3` is said to be negative rather than not a number. */
const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** Parses a template (see CostTemplate); a RangeError names what is wrong with it. */
export function parseCostTemplate(source: string): CostTemplate {
  const text = source.trim();
  if (text === "{}") return { kind: "item", source };
  const field = /^\{(\d+)\}$/.exec(text);
  if (field) {
    const index = Number(field[1]);
    if (index >= 1 && Number.isSafeInteger(index)) return { kind: "field", source, field: index };
    throw new RangeError(`cost template ${JSON.stringify(source)}: fields count from 1, as in {1}`);
  }
  const json = /^\{\.([^{}]*)\}$/.exec(text);
  if (json) {
    const path = json[1]!.split(".");
    if (path.every((step) => step !== "")) return { kind: "json", source, path };
    throw new RangeError(`cost template ${JSON.stringify(source)}: a JSON field is like {.max_tokens} or {.usage.input}, without empty steps`);
  }
  if (DECIMAL.test(text)) {
    const value = Number(text);
    if (value >= 0 && value <= MAX_COST) return { kind: "number", source, value };
    throw new RangeError(`cost template ${JSON.stringify(source)}: a cost is a number from 0 to 2^53 - 1`);
  }
  throw new RangeError(`cost template ${JSON.stringify(source)} is not a number, {N} (a whitespace field, from 1), {.field} (a field of a JSON item) or {} (the whole item)`);
}

/** The cost of one item, or a CostError. */
export function costOf(template: CostTemplate, item: string): number {
  return costsOf([template], item)[0]!;
}

/** The costs of one item under several templates, reading its JSON once. */
export function costsOf(templates: readonly CostTemplate[], item: string): number[] {
  const read = new ItemReader(item, "cost");
  return templates.map((template) => {
    if (template.kind === "number") return template.value;
    const { value, where } = read.at(template);
    if (typeof value === "number") return checkCost(value, String(value), template.source);
    if (typeof value === "string") return numberFrom(value, where, template.source);
    throw new CostError("not-a-number", `cost ${template.source}: ${where} is ${shown(JSON.stringify(value))}, not a number`);
  });
}

/**
 * The text a template reads from an item (`--class-of {2}`, `{.priority}`):
 * a whitespace field, a JSON field that is a string (a number counts as
 * its digits) or the whole item; `what` names the option in errors. A number
 * template reads as its text. A CostError when the item has no such field.
 */
export function textOf(template: CostTemplate, item: string, what: string): string {
  if (template.kind === "number") return template.source.trim();
  const { value, where } = new ItemReader(item, what).at(template);
  if (typeof value === "string") return value;
  if (typeof value === "number") return String(value);
  throw new CostError("not-text", `${what} ${template.source}: ${where} is ${shown(JSON.stringify(value))}, not a string`);
}

/** Reads fields of one item, splitting it or parsing its JSON once for every template. */
class ItemReader {
  #parsed: { value: unknown } | undefined;
  #fields: string[] | undefined;
  constructor(
    readonly item: string,
    /** The option, for errors: "cost". */
    readonly what: string,
  ) {}

  /** The value a template names, and how to name it in an error. */
  at(template: Exclude<CostTemplate, { kind: "number" }>): { value: unknown; where: string } {
    const { item, what } = this;
    switch (template.kind) {
      case "item":
        return { value: item, where: "the item" };
      case "field": {
        const fields = (this.#fields ??= item.trim() === "" ? [] : item.trim().split(/\s+/));
        const value = fields[template.field - 1];
        if (value === undefined) {
          throw new CostError("missing", `${what} ${template.source}: the item has ${fields.length} field${fields.length === 1 ? "" : "s"}, not ${template.field}`);
        }
        return { value, where: `field ${template.field}` };
      }
      case "json": {
        if (!this.#parsed) {
          try {
            this.#parsed = { value: JSON.parse(item) };
          } catch {
            throw new CostError("not-json", `${what} ${template.source}: the item is not JSON`);
          }
        }
        return { value: jsonAt(this.#parsed.value, template, what), where: `.${template.path.join(".")}` };
      }
    }
  }
}

function jsonAt(root: unknown, template: CostTemplate & { kind: "json" }, what: string): unknown {
  let value = root;
  const where = `.${template.path.join(".")}`;
  for (const step of template.path) {
    const holder = value;
    value = undefined;
    if (Array.isArray(holder)) {
      if (/^\d+$/.test(step)) value = holder[Number(step)];
    } else if (typeof holder === "object" && holder !== null && Object.hasOwn(holder, step)) {
      value = (holder as Record<string, unknown>)[step];
    }
    if (value === undefined) throw new CostError("missing", `${what} ${template.source}: the item has no field ${where}`);
  }
  return value;
}

function numberFrom(text: string, what: string, source: string): number {
  if (!DECIMAL.test(text.trim())) throw new CostError("not-a-number", `cost ${source}: ${what} is ${shown(JSON.stringify(text))}, not a number`);
  return checkCost(Number(text), text.trim(), source);
}

function checkCost(value: number, written: string, source: string): number {
  if (value < 0) throw new CostError("negative", `cost ${source}: ${shown(written)} is negative`);
  if (!(value <= MAX_COST)) throw new CostError("too-large", `cost ${source}: ${shown(written)} is above 2^53 - 1 (${MAX_COST})`);
  return value;
}

/** A value as an error shows it: short, since an item may hold anything. */
function shown(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
