import type { SyntaxNode } from "./syntax.js";

/** A name, an expansion or a substitution: what arithmetic evaluates again, or what fish would run. */
const ARITHMETIC_NAME = /[A-Za-z_$`]/;

/**
 * Whether bash evaluates a name or an expansion as arithmetic here: `$((…))`, `((…))`, a C-style
 * for loop, an array subscript, or an operand of a numeric comparison in `[[ … ]]` (`-eq`, `-lt`,
 * …). A variable's value is evaluated again there, and `a[$(cmd)]` in it runs cmd.
 */
export function arithmeticName(node: SyntaxNode, text: (n: SyntaxNode) => string): boolean {
  switch (node.type) {
    case "arithmetic_expansion":
    case "c_style_for_statement":
      return ARITHMETIC_NAME.test(
        text(node)
          .replace(/^\$?\(\(|\)\)$/g, "")
          .replace(/^for\b|\bdo\b[\s\S]*$/g, ""),
      );
    case "compound_statement":
      return node.children[0]?.type === "((" && ARITHMETIC_NAME.test(text(node).slice(2, -2));
    case "subscript": {
      const open = node.children.findIndex((c) => c.type === "[");
      return node.children.slice(open + 1, -1).some((c) => ARITHMETIC_NAME.test(text(c)));
    }
    case "test_command":
      // `[[ $x -eq 1 ]]` evaluates its operands; the `[`/test builtin only parses integers.
      return node.children[0]?.type === "[[" && numericComparisonOfName(node, text);
    default:
      return false;
  }
}

/** A `-eq`/`-lt`/… comparison below `node` with a name or an expansion as an operand. */
function numericComparisonOfName(node: SyntaxNode, text: (n: SyntaxNode) => string): boolean {
  const stack = [node];
  for (let n = stack.pop(); n !== undefined; n = stack.pop()) {
    const op = n.children.find((c) => c.type === "test_operator");
    if (n.type === "binary_expression" && op !== undefined && /^-(?:eq|ne|lt|le|gt|ge)$/.test(text(op))) {
      if (n.children.some((c) => c !== op && ARITHMETIC_NAME.test(text(c)))) return true;
    }
    stack.push(...n.children);
  }
  return false;
}
