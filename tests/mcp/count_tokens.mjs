// Counts the tokens of each file given, with OpenAI's o200k_base and cl100k_base
// encodings (gpt-tokenizer 4.0.0, vocabularies bundled in the npm package).
// Used by `cargo run -p a2app-server --example mcp_tools_size`.
//   node count_tokens.mjs FILE...   → one line per file: "<o200k> <cl100k>"
import { readFileSync } from "node:fs";
import { countTokens as o200k } from "gpt-tokenizer/encoding/o200k_base";
import { countTokens as cl100k } from "gpt-tokenizer/encoding/cl100k_base";

for (const file of process.argv.slice(2)) {
  const text = readFileSync(file, "utf8");
  console.log(`${o200k(text)} ${cl100k(text)}`);
}
