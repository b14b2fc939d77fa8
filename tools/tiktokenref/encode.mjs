// encode.mjs — an independent tiktoken encoder for kestrel's parity tests.
//
// Usage: node tools/tiktokenref/encode.mjs RANKS.tiktoken ENC.json < texts.jsonl > ids.jsonl
//
// RANKS.tiktoken holds "base64(token) rank" lines; ENC.json holds pat_str and
// special_tokens (the layout of ../shared/data/tiktoken). Each input line is
// a JSON string; each output line is the JSON array of its token ids
// (ordinary text: special tokens are not recognised). The pre-tokenizer is
// pat_str compiled as a JavaScript RegExp with the "u" flag (the engine
// js-tiktoken uses, with \p{…} classes and lookahead); each piece is encoded
// as UTF-8 and merged by rank: repeatedly join the adjacent pair whose bytes
// have the lowest rank, as OpenAI's tiktoken does. No dependency beyond node.
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";

const [ranksPath, encPath] = process.argv.slice(2);
if (!ranksPath || !encPath) {
  console.error("usage: node encode.mjs RANKS.tiktoken ENC.json < texts.jsonl");
  process.exit(2);
}
const ranks = new Map(); // token bytes as a latin1 string → rank
for (const line of readFileSync(ranksPath, "utf8").split("\n")) {
  if (!line.trim()) continue;
  const [b64, r] = line.trim().split(" ");
  ranks.set(Buffer.from(b64, "base64").toString("latin1"), Number(r));
}
const enc = JSON.parse(readFileSync(encPath, "utf8"));
const re = new RegExp(enc.pat_str, "gu");
const utf8 = new TextEncoder();

function bpe(bytes) {
  const s = Buffer.from(bytes).toString("latin1");
  const whole = ranks.get(s);
  if (whole !== undefined) return [whole];
  let parts = Array.from(s); // one latin1 char per byte
  for (;;) {
    let best = -1, bestRank = Infinity;
    for (let i = 0; i + 1 < parts.length; i++) {
      const r = ranks.get(parts[i] + parts[i + 1]);
      if (r !== undefined && r < bestRank) { bestRank = r; best = i; }
    }
    if (best < 0) break;
    parts.splice(best, 2, parts[best] + parts[best + 1]);
  }
  return parts.map((p) => {
    const r = ranks.get(p);
    if (r === undefined) throw new Error(`byte ${JSON.stringify(p)} has no rank`);
    return r;
  });
}

let gaps = 0;
const out = [];
const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (!line) continue;
  const text = JSON.parse(line);
  const ids = [];
  let pos = 0;
  for (const m of text.matchAll(re)) {
    if (m.index !== pos) gaps++;
    pos = m.index + m[0].length;
    ids.push(...bpe(utf8.encode(m[0])));
  }
  if (pos !== text.length) gaps++;
  out.push(JSON.stringify(ids));
  if (out.length >= 1000) { process.stdout.write(out.join("\n") + "\n"); out.length = 0; }
}
if (out.length) process.stdout.write(out.join("\n") + "\n");
if (gaps) console.error(`warning: ${gaps} stretches of text matched no alternative of pat_str`);
