/**
 * Quotes text for /bin/sh so that it is one word, taken literally: inside
 * single quotes nothing is special, and a single quote itself is written as
 * '\'' (close, escaped quote, reopen). `$(touch pwned); rm -rf x` stays text.
 */
export function shellQuote(text: string): string {
  if (SAFE_WORD.test(text)) return text;
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

const SAFE_WORD = /^[\w@%+=:,./-]+$/;
const ITEM = "{}";

/** Where a `{}` of a shell script lands: outside quotes, inside '…', or inside "…". */
export type ItemContext = "unquoted" | "single" | "double";

/** A script split at its `{}`: `parts` has one more entry than `contexts`. */
export interface ShellTemplate {
  readonly parts: readonly string[];
  readonly contexts: readonly ItemContext[];
}

/** A `{}` where no quoting can keep an item from being read as code; the message says what to write instead. */
export class ShellTemplateError extends Error {}

/**
 * Writes `item` for the quoting in force where it lands, so that it is always
 * text: outside quotes single-quoted; inside '…' or "…" the quote is closed,
 * the item single-quoted and the quote reopened (`"abc{}def"` becomes
 * `"abc"'item'"def"`: in "…" a ' is literal, so quoting must happen outside).
 */
function quoteFor(context: ItemContext, item: string): string {
  if (context === "unquoted" || SAFE_WORD.test(item)) return shellQuote(item);
  const close = context === "single" ? "'" : '"';
  return `${close}${shellQuote(item)}${close}`;
}

/** The script with every `{}` replaced by `item`, quoted for its place. */
export function fillShellTemplate(template: ShellTemplate, item: string): string {
  let script = template.parts[0]!;
  template.contexts.forEach((context, index) => {
    script += quoteFor(context, item) + template.parts[index + 1]!;
  });
  return script;
}

interface Frame {
  /** `code`: unquoted, at the top or inside $(…); `double`: inside "…". */
  readonly kind: "code" | "double";
  /** A $(…): its `)` ends it; `depth` counts the ( ) inside it. */
  readonly substitution: boolean;
  depth: number;
}

/** Characters after which a new word starts (where # opens a comment). */
const WORD_BREAK = new Set([" ", "\t", "\n", ";", "&", "|", "(", ")", "<", ">"]);
/** Characters that end a here-document's delimiter word. */
const DELIMITER_END = new Set([" ", "\t", "\n", ";", "&", "|", "(", ")", "<", ">"]);

/**
 * Finds the quoting context of every `{}` in a `/bin/sh -c` script, as the
 * shell will read it: outside quotes, in '…', in "…", and inside $(…) at any
 * depth. A `{}` where an item could still be read as code, or whose context
 * depends on the shell, is refused with a ShellTemplateError: after a
 * backslash, after a $, inside backquotes, $'…', ${…}, arithmetic, a comment
 * or a here-document, and after constructs whose end only a full parser finds.
 */
export function parseShellTemplate(script: string): ShellTemplate {
  const parts: string[] = [];
  const contexts: ItemContext[] = [];
  const stack: Frame[] = [{ kind: "code", substitution: false, depth: 0 }];
  /** Why the contexts from here on cannot be told: set by a construct this lexer does not follow to its end. */
  let unsure: string | undefined;
  let wordStart = true;
  let partStart = 0;
  let i = 0;
  /** Here-documents whose bodies start after this line; `quoted`: a delimiter with quotes, a body taken literally. */
  const heredocs: Array<{ delimiter: string; stripTabs: boolean; quoted: boolean; depth: number }> = [];

  const slot = (context: ItemContext) => {
    if (unsure !== undefined) throw new ShellTemplateError(`{} after ${unsure}: tbucket cannot tell how the shell quotes it there; put {} before it, or pass the item in a variable: "item={}; ..." then "$item"`);
    parts.push(script.slice(partStart, i));
    contexts.push(context);
    i += ITEM.length;
    partStart = i;
  };
  const refuse = (where: string, instead: string): never => {
    throw new ShellTemplateError(`{} ${where} cannot be quoted safely; ${instead}`);
  };
  const itemAt = (at: number) => script.startsWith(ITEM, at);
  const VARIABLE = `assign it to a variable outside (item={}; ...) and use "$item" there`;

  /** At a `$`: a substitution, a parameter, or a quote that starts with $. */
  const dollar = (frame: Frame) => {
    const next = script[i + 1];
    if (itemAt(i + 1)) refuse("right after a $", "write the $ after the item, or put the item in quotes of its own");
    if (script.startsWith("$((", i)) {
      arithmetic("$((…))", i + 3, "))", false);
    } else if (next === "(") {
      stack.push({ kind: "code", substitution: true, depth: 0 });
      i += 2;
      wordStart = true;
    } else if (next === "[") {
      arithmetic("$[…]", i + 2, "]");
    } else if (next === "{") {
      const end = script.indexOf("}", i + 2);
      const body = end === -1 ? "" : script.slice(i + 2, end + 1);
      if (body.includes(ITEM)) refuse("inside ${…}", VARIABLE);
      if (end === -1 || /[{'"`$\\]/.test(body)) unsure ??= "a ${…} holding quotes or substitutions";
      i = end === -1 ? i + 2 : end + 1;
    } else if (next === "'" && frame.kind === "code") {
      // $'…' is bash's (not dash's): refused inside; one holding \' ends at different places in the two.
      let j = i + 2;
      for (; j < script.length && script[j] !== "'"; j++) {
        if (itemAt(j)) refuse("inside $'…'", "close the $'…' before {} and reopen it after");
        if (script[j] === "\\") {
          if (script[j + 1] === "'") unsure ??= "a $'…' holding \\'";
          j++;
        }
      }
      i = j + 1;
    } else if (next === '"' && frame.kind === "code") {
      // bash's $"…" is "…" looked up in a message catalogue: quoted as "…".
      stack.push({ kind: "double", substitution: false, depth: 0 });
      i += 2;
    } else {
      i++;
    }
  };

  /**
   * Arithmetic ($((…)), and bash's $[…], ((…)) and array subscripts a[…]=)
   * reads its text as if in "…" whose quotes are literal: no quoting keeps a
   * $(…) in an item from running there. Skips to `close`, refusing a {}
   * before it; one it cannot find the end of makes every later {} refused
   * (an unclosed $(( may be $( (…) …), lexed on from `from`).
   */
  const arithmetic = (what: string, from: number, close: "]" | "))", bash = true) => {
    const end = close === "))" ? findClosing(script, from, 2) : script.indexOf("]", from);
    const body = end === -1 ? "" : script.slice(from, end);
    if (body.includes(ITEM)) refuse(`inside ${what}${bash ? " (bash arithmetic)" : ""}`, VARIABLE);
    if (end === -1 || /['"`\\]|\$\(/.test(body) || (close === "]" && body.includes("["))) {
      unsure ??= `${what.startsWith("an ") ? what : `a ${what}`} holding quotes or substitutions`;
    }
    i = end === -1 ? from : end + close.length;
  };

  const backquote = () => {
    let j = i + 1;
    for (; j < script.length && script[j] !== "`"; j++) {
      if (itemAt(j)) refuse("inside backquotes", "write $(…) instead of `…`");
      if (script[j] === "\\") j++;
    }
    i = j + 1;
  };

  /** At `<<`: reads the delimiter of a here-document, whose body starts after the line's end. */
  const heredoc = () => {
    i += 2;
    const stripTabs = script[i] === "-";
    if (stripTabs) i++;
    while (script[i] === " " || script[i] === "\t") i++;
    let delimiter = "";
    let quoted = false;
    while (i < script.length && !DELIMITER_END.has(script[i]!)) {
      if (itemAt(i)) refuse("as a here-document's delimiter", "write a fixed word after <<");
      const c = script[i]!;
      if (c === "'" || c === '"') {
        const end = script.indexOf(c, i + 1);
        const text = script.slice(i + 1, end === -1 ? undefined : end);
        if (text.includes(ITEM)) refuse("as a here-document's delimiter", "write a fixed word after <<");
        delimiter += text;
        quoted = true;
        i = end === -1 ? script.length : end + 1;
      } else if (c === "\\") {
        delimiter += script[i + 1] ?? "";
        quoted = true;
        i += 2;
      } else {
        delimiter += c;
        i++;
      }
    }
    heredocs.push({ delimiter, stripTabs, quoted, depth: stack.length });
  };

  /** At an unquoted newline with here-documents pending: skips their bodies, refusing {} in them. */
  const heredocBodies = () => {
    // Declared outside the $(…) this line ends in (or inside one since closed): where its body starts depends on the shell.
    if (heredocs.some((heredoc) => heredoc.depth !== stack.length)) unsure ??= "a here-document and a $(…) across lines";
    i++;
    for (const { delimiter, stripTabs, quoted } of heredocs.splice(0)) {
      while (i < script.length) {
        const newline = script.indexOf("\n", i);
        const lineEnd = newline === -1 ? script.length : newline;
        const line = script.slice(i, lineEnd);
        i = lineEnd + 1;
        if ((stripTabs ? line.replace(/^\t+/, "") : line) === delimiter) break;
        if (line.includes(ITEM)) refuse("inside a here-document", `give the item to the command as an argument, or on its standard input: printf '%s\\n' {} | cmd`);
        // Expanded, a body's $(…) or `…` may run past the delimiter's line, and a \ joins the next line to it.
        if (!quoted && /\$\(|\$\{|`|\\$/.test(line)) unsure ??= "a here-document holding substitutions";
      }
    }
    i = Math.min(i, script.length);
    wordStart = true;
  };

  while (i < script.length) {
    const frame = stack[stack.length - 1]!;
    if (itemAt(i)) {
      slot(frame.kind === "double" ? "double" : "unquoted");
      wordStart = false;
      continue;
    }
    const c = script[i]!;
    if (c === "\\") {
      if (itemAt(i + 1)) refuse("right after a backslash", "remove the backslash: the item is quoted for you");
      i += 2;
      wordStart = false;
    } else if (c === "`") {
      backquote();
      wordStart = false;
    } else if (c === "$") {
      dollar(frame);
      if (stack[stack.length - 1] === frame) wordStart = false;
    } else if (frame.kind === "double") {
      if (c === '"') stack.pop();
      i++;
    } else if (c === "'") {
      let j = i + 1;
      for (; j < script.length && script[j] !== "'"; j++) {
        if (!itemAt(j)) continue;
        i = j;
        slot("single");
        j = i - 1;
      }
      i = j + 1;
      wordStart = false;
    } else if (c === '"') {
      stack.push({ kind: "double", substitution: false, depth: 0 });
      i++;
      wordStart = false;
    } else if (c === "#" && wordStart) {
      const newline = script.indexOf("\n", i);
      const end = newline === -1 ? script.length : newline;
      if (script.slice(i, end).includes(ITEM)) refuse("inside a # comment", "move it out of the comment, or remove the #");
      i = end;
    } else if (c === "(" && wordStart && script[i + 1] === "(") {
      arithmetic("((…))", i + 2, "))");
      wordStart = false;
    } else if (wordStart && /^[A-Za-z_]\w*\[/.test(script.slice(i, i + 256))) {
      // A word that starts as an array subscript (bash's a[…]=…): up to the [ is a name, then arithmetic.
      const open = script.indexOf("[", i);
      i = open;
      arithmetic("an array subscript", open + 1, "]");
      wordStart = false;
    } else if (c === "<" && script.startsWith("<<", i) && !script.startsWith("<<<", i)) {
      heredoc();
      wordStart = true;
    } else if (c === "\n" && heredocs.length > 0) {
      heredocBodies();
    } else {
      if (frame.substitution) {
        // A case pattern's ) would end $(…) early for a counter of parentheses: the shell's parser is needed.
        if (wordStart && /^case[\s;]/.test(script.slice(i, i + 5))) unsure ??= "a case inside $(…)";
        if (c === "(") frame.depth++;
        if (c === ")" && frame.depth-- === 0) stack.pop();
      }
      wordStart = WORD_BREAK.has(c);
      i++;
    }
  }
  parts.push(script.slice(partStart));
  return { parts, contexts };
}

/** The index of the `count` closing parentheses that end a $((…)) whose body starts at `from`; -1 when they never come. */
function findClosing(script: string, from: number, count: number): number {
  let depth = 0;
  for (let j = from; j < script.length; j++) {
    if (script[j] === "(") depth++;
    else if (script[j] === ")") {
      if (depth > 0) depth--;
      else if (script.startsWith(")".repeat(count), j)) return j;
      else return -1;
    }
  }
  return -1;
}
