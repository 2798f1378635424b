#!/usr/bin/env node
// Builds the dashboard (src/dashboard, README "Dashboard") into dist/dashboard: one minified script and
// one stylesheet under assets/, named by content hash so they can be cached for good, and index.html,
// which is never cached and names them. Everything the page needs is in the bundle: no CDN.
import { build } from 'esbuild';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'dist', 'dashboard');
rmSync(out, { recursive: true, force: true });
mkdirSync(path.join(out, 'assets'), { recursive: true });

const result = await build({
  entryPoints: { app: path.join(root, 'src', 'dashboard', 'main.tsx') },
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2022'],
  platform: 'browser',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outdir: path.join(out, 'assets'),
  entryNames: '[name]-[hash]',
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});

const files = Object.keys(result.metafile.outputs).map((f) => path.relative(path.join(out, 'assets'), path.resolve(root, f)));
const js = files.find((f) => f.endsWith('.js'));
const css = files.find((f) => f.endsWith('.css'));
if (!js || !css) throw new Error(`dashboard build produced ${files.join(', ')}; expected a .js and a .css`);

const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>weft</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="assets/${css}">
<script type="module" src="assets/${js}"></script>
</head>
<body>
<div id="app"></div>
<noscript>The weft dashboard needs JavaScript.</noscript>
</body>
</html>
`;
writeFileSync(path.join(out, 'index.html'), html);

const gz = (f) => gzipSync(readFileSync(path.join(out, 'assets', f))).length;
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
process.stderr.write(`dashboard: dist/dashboard (${js} ${kb(gz(js))} + ${css} ${kb(gz(css))} gzipped)\n`);
