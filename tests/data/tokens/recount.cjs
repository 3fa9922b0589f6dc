// Recomputes counts.json: the o200k_base token counts of every corpus file in this folder.
//
// tiktoken cannot download its ranks here, but the npm package js-tiktoken ships the same
// o200k_base ranks (rebuilt as a .tiktoken file they hash to tiktoken's expected sha256,
// 446a9538...1a2d). Run by hand, outside the repository:
//
//   mkdir -p /tmp/o200k && cd /tmp/o200k && npm install --ignore-scripts js-tiktoken@1.0.21
//   NODE_PATH=/tmp/o200k/node_modules node tests/data/tokens/recount.cjs
//
// The test (tests/test_tokens.py) only reads counts.json; it never needs the encoding.
"use strict";
const fs = require("fs");
const path = require("path");
const { getEncoding } = require("js-tiktoken");

const enc = getEncoding("o200k_base");
const here = __dirname;
const counts = {};
for (const name of fs.readdirSync(here).sort()) {
  if (name === "counts.json" || name.endsWith(".cjs")) continue;
  const text = fs.readFileSync(path.join(here, name), "utf8");
  counts[name] = enc.encode(text, [], []).length;
}
const out = {
  encoding: "o200k_base",
  computedWith: "js-tiktoken@1.0.21 (tests/data/tokens/recount.cjs)",
  counts,
};
fs.writeFileSync(path.join(here, "counts.json"), JSON.stringify(out, null, 2) + "\n");
console.log(out);
