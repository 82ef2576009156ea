import { describe, expect, it } from "vitest";
import { CostError, costOf, costsOf, MAX_COST, parseCostTemplate } from "../../src/run/cost-template.js";

const cost = (template: string, item: string) => costOf(parseCostTemplate(template), item);

/** The CostError an item gives: its code and message. */
function failure(template: string, item: string): { code: string; message: string } {
  try {
    cost(template, item);
  } catch (error) {
    expect(error).toBeInstanceOf(CostError);
    return { code: (error as CostError).code, message: (error as CostError).message };
  }
  throw new Error(`expected ${template} to fail on ${item}`);
}

describe("parseCostTemplate", () => {
  it("knows the four forms", () => {
    expect(parseCostTemplate("{.max_tokens}")).toEqual({ kind: "json", source: "{.max_tokens}", path: ["max_tokens"] });
    expect(parseCostTemplate("{.usage.input}")).toEqual({ kind: "json", source: "{.usage.input}", path: ["usage", "input"] });
    expect(parseCostTemplate("{2}")).toEqual({ kind: "field", source: "{2}", field: 2 });
    expect(parseCostTemplate("{}")).toEqual({ kind: "item", source: "{}" });
    expect(parseCostTemplate("250")).toEqual({ kind: "number", source: "250", value: 250 });
    expect(parseCostTemplate(" 0.5 ")).toEqual({ kind: "number", source: " 0.5 ", value: 0.5 });
  });

  it.each([
    ["{0}", 'cost template "{0}": fields count from 1, as in {1}'],
    ["{.}", 'cost template "{.}": a JSON field is like {.max_tokens} or {.usage.input}, without empty steps'],
    ["{.a..b}", 'cost template "{.a..b}": a JSON field is like {.max_tokens} or {.usage.input}, without empty steps'],
    ["-1", 'cost template "-1": a cost is a number from 0 to 2^53 - 1'],
    ["1e300", 'cost template "1e300": a cost is a number from 0 to 2^53 - 1'],
    ["{.a", 'cost template "{.a" is not a number, {N} (a whitespace field, from 1), {.field} (a field of a JSON item) or {} (the whole item)'],
    ["{max_tokens}", 'cost template "{max_tokens}" is not a number, {N} (a whitespace field, from 1), {.field} (a field of a JSON item) or {} (the whole item)'],
    ["{1} + {2}", 'cost template "{1} + {2}" is not a number, {N} (a whitespace field, from 1), {.field} (a field of a JSON item) or {} (the whole item)'],
    ["", 'cost template "" is not a number, {N} (a whitespace field, from 1), {.field} (a field of a JSON item) or {} (the whole item)'],
  ])("refuses %j as a template, with a RangeError of one line", (template, message) => {
    expect(() => parseCostTemplate(template)).toThrow(new RangeError(message));
  });
});

describe("costOf", () => {
  it("reads a field of a JSON item, into objects and arrays", () => {
    expect(cost("{.max_tokens}", '{"prompt":"hi","max_tokens":256}')).toBe(256);
    expect(cost("{.usage.estimate}", '{"usage":{"estimate":12.5}}')).toBe(12.5);
    expect(cost("{.choices.1.n}", '{"choices":[{"n":1},{"n":7}]}')).toBe(7);
    expect(cost("{.n}", '{"n":"120"}')).toBe(120);
    expect(cost("{.n}", `{"n":${MAX_COST}}`)).toBe(MAX_COST);
    expect(cost("{.n}", '{"n":0}')).toBe(0);
  });

  it("reads a whitespace field, from 1, and the whole item", () => {
    expect(cost("{2}", "https://a/x 4096 extra")).toBe(4096);
    expect(cost("{1}", "  12\t 34 ")).toBe(12);
    expect(cost("{2}", "a\t\t7")).toBe(7);
    expect(cost("{}", " 99 ")).toBe(99);
    expect(cost("3", "anything at all")).toBe(3);
  });

  it.each([
    ["{.max_tokens}", '{"prompt":"hi"}', "missing", "cost {.max_tokens}: the item has no field .max_tokens"],
    ["{.a.b}", '{"a":3}', "missing", "cost {.a.b}: the item has no field .a.b"],
    ["{.a.b}", '{"a":null}', "missing", "cost {.a.b}: the item has no field .a.b"],
    ["{.a.x}", '{"a":[1,2]}', "missing", "cost {.a.x}: the item has no field .a.x"],
    ["{.toString}", "{}", "missing", "cost {.toString}: the item has no field .toString"],
    ["{.n}", "not json", "not-json", "cost {.n}: the item is not JSON"],
    ["{.n}", '{"n":"abc"}', "not-a-number", 'cost {.n}: .n is "abc", not a number'],
    ["{.n}", '{"n":null}', "not-a-number", "cost {.n}: .n is null, not a number"],
    ["{.n}", '{"n":true}', "not-a-number", "cost {.n}: .n is true, not a number"],
    ["{.n}", '{"n":{"deep":1}}', "not-a-number", 'cost {.n}: .n is {"deep":1}, not a number'],
    ["{.n}", `{"n":"${"9".repeat(100)}x"}`, "not-a-number", `cost {.n}: .n is "${"9".repeat(39)}…, not a number`],
    ["{.n}", '{"n":-3}', "negative", "cost {.n}: -3 is negative"],
    // Written 2^53 + 1, read as 2^53: refused, since the item may not say what it is read as.
    ["{.n}", '{"n":9007199254740993}', "too-large", "cost {.n}: 9007199254740992 is above 2^53 - 1 (9007199254740991)"],
    ["{.n}", `{"n":${2 ** 53 + 2}}`, "too-large", "cost {.n}: 9007199254740994 is above 2^53 - 1 (9007199254740991)"],
    ["{.n}", '{"n":1e400}', "too-large", "cost {.n}: Infinity is above 2^53 - 1 (9007199254740991)"],
    ["{2}", "only-one", "missing", "cost {2}: the item has 1 field, not 2"],
    ["{1}", "   ", "missing", "cost {1}: the item has 0 fields, not 1"],
    ["{2}", "a b c", "not-a-number", 'cost {2}: field 2 is "b", not a number'],
    ["{2}", "a NaN", "not-a-number", 'cost {2}: field 2 is "NaN", not a number'],
    ["{2}", "a Infinity", "not-a-number", 'cost {2}: field 2 is "Infinity", not a number'],
    ["{2}", "a 0x10", "not-a-number", 'cost {2}: field 2 is "0x10", not a number'],
    ["{2}", "a -1", "negative", "cost {2}: -1 is negative"],
    ["{2}", "a 1e16", "too-large", "cost {2}: 1e16 is above 2^53 - 1 (9007199254740991)"],
    ["{}", "", "not-a-number", 'cost {}: the item is "", not a number'],
  ])("%s of %s: %s", (template, item, code, message) => {
    expect(failure(template, item)).toEqual({ code, message });
  });

  it("reads several costs of one item, one per cost limit", () => {
    const templates = ["{.prompt_tokens}", "{.max_tokens}", "1"].map(parseCostTemplate);
    expect(costsOf(templates, '{"prompt_tokens":40,"max_tokens":300}')).toEqual([40, 300, 1]);
  });
});
