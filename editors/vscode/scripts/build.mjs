// Bundle the extension with esbuild into dist/extension.js (vscode stays external), and lay out the chat
// instruction slots (chat/slot-N.instructions.md, see src/chatInstructions.ts): generated, never committed,
// since a window that runs the extension from this folder points them at its own storage.
import * as esbuild from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';

const manifest = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const root = path.dirname(new URL('../package.json', import.meta.url).pathname);
for (const slot of manifest.contributes.chatInstructions ?? []) {
  const file = path.join(root, slot.path);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  let isLink = false;
  try {
    isLink = fs.lstatSync(file).isSymbolicLink();
  } catch {
    /* missing */
  }
  if (isLink || !fs.existsSync(file)) {
    fs.rmSync(file, { force: true });
    fs.writeFileSync(file, "---\napplyTo: '**'\n---\nContext Companion: this slot is not in use.\n");
  }
}

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

const options = {
  entryPoints: ['src/extension.ts'],
  bundle: true,
  outfile: 'dist/extension.js',
  external: ['vscode'],
  format: 'cjs',
  platform: 'node',
  target: 'node18',
  sourcemap: production ? false : 'linked',
  minify: production,
  logLevel: 'info',
};

if (watch) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  await esbuild.build(options);
}
