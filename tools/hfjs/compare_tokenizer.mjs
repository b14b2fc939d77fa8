// Compares the ids Hugging Face's JavaScript tokenizer (@huggingface/transformers)
// gives for each line of a text file with the ids kestrel gives
// (`kestrel tokenizer encode --lines`, one JSON array per line).
//
//   node tools/hfjs/compare_tokenizer.mjs HF_DIR TEXT IDS.jsonl
//
// Prints the number of lines compared and of lines that differ (with the first
// few), and exits 1 when any differs. See tools/hfjs/README.md.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { AutoTokenizer, env } from '@huggingface/transformers';

const [dir, textPath, idsPath] = process.argv.slice(2);
if (!idsPath) {
  console.error('usage: compare_tokenizer.mjs HF_DIR TEXT IDS.jsonl');
  process.exit(2);
}
env.allowRemoteModels = false;
env.localModelPath = path.dirname(path.resolve(dir)) + '/';
const tok = await AutoTokenizer.from_pretrained(path.basename(path.resolve(dir)));
const lines = readFileSync(textPath, 'utf8').split('\n');
const want = readFileSync(idsPath, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
if (lines.length !== want.length && !(lines.length === want.length + 1 && lines.at(-1) === '')) {
  console.error(`${textPath} has ${lines.length} lines, ${idsPath} ${want.length}`);
  process.exit(2);
}
let bad = 0;
for (let i = 0; i < want.length; i++) {
  const got = tok.encode(lines[i], { add_special_tokens: false });
  if (got.length !== want[i].length || got.some((id, j) => id !== want[i][j])) {
    if (bad < 5) console.log(`line ${i + 1}: js ${JSON.stringify(got)} kestrel ${JSON.stringify(want[i])}`);
    bad++;
  }
}
console.log(`${path.basename(textPath)}: ${want.length} lines, ${bad} differ`);
process.exit(bad ? 1 : 0);
