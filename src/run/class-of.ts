import { type CostTemplate, parseCostTemplate, textOf } from "./cost-template.js";

/**
 * A job's class from its item (`run --class-of`, DESIGN 12): a field read as
 * --cost reads one (`{2}` a whitespace field, `{.priority}` a JSON field,
 * `{}` the whole item), or one class NAME for every job.
 */
export type ClassOf = { readonly kind: "name"; readonly name: string } | { readonly kind: "field"; readonly template: CostTemplate };

/** Parses --class-of; a RangeError says what is wrong. */
export function parseClassOf(source: string): ClassOf {
  const text = source.trim();
  if (text.startsWith("{")) {
    let template: CostTemplate;
    try {
      template = parseCostTemplate(text);
    } catch {
      throw new RangeError(`"${source}" is not {N} (a whitespace field, from 1), {.field} (a field of a JSON item), {} (the whole item) or a class name`);
    }
    return { kind: "field", template };
  }
  return { kind: "name", name: text };
}

/** The class an item names; a CostError when the item has no such field. */
export function classOfItem(classOf: ClassOf, item: string | undefined): string {
  if (classOf.kind === "name") return classOf.name;
  return textOf(classOf.template, item ?? "", "class");
}
