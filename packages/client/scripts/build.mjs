// Builds the publishable package into dist/ from src/ with TypeScript (`npm run build`, and `prepack`):
//   index.js   + index.d.ts    ESM, for `import`
//   index.cjs  + index.d.cts   CommonJS, for `require` (openapi-fetch ships CommonJS too, so it stays a dependency)
//   api.d.ts   + api.d.cts     the generated types (src/api.d.ts), one copy per module format
// The JavaScript is TypeScript's per-file transpile: for CommonJS its `esModuleInterop` helper reads
// openapi-fetch's `exports.default`, where esbuild, seeing a "type": "module" package, would hand the whole
// `module.exports` object to the default import. Declarations come from one type-checked program.
// Inside the repository nothing needs this build: tsconfig `paths` and vitest's alias point at src/.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const PKG = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const SRC = path.join(PKG, 'src');
export const DIST = path.join(PKG, 'dist');

const transpile = (source, module) =>
  ts.transpileModule(source, { compilerOptions: { module, target: ts.ScriptTarget.ES2022, esModuleInterop: true }, fileName: 'index.ts' }).outputText;

/** index.d.ts from a type-checked program over src/ (fails on any type error). */
function declarations(outDir) {
  const program = ts.createProgram([path.join(SRC, 'index.ts')], {
    declaration: true,
    emitDeclarationOnly: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    skipLibCheck: true,
    types: [],
    rootDir: SRC,
    outDir,
  });
  const diagnostics = [...ts.getPreEmitDiagnostics(program), ...program.emit().diagnostics];
  if (diagnostics.length > 0) {
    const host = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => PKG, getNewLine: () => '\n' };
    throw new Error(`@tollgate/client does not typecheck:\n${ts.formatDiagnostics(diagnostics, host)}`);
  }
  return fs.readFileSync(path.join(outDir, 'index.d.ts'), 'utf8');
}

export function build() {
  // Built beside dist/ and renamed into place, so a reader never sees half a build.
  const tmp = fs.mkdtempSync(path.join(PKG, 'dist.tmp-'));
  try {
    const source = fs.readFileSync(path.join(SRC, 'index.ts'), 'utf8');
    const api = fs.readFileSync(path.join(SRC, 'api.d.ts'), 'utf8');
    const dts = declarations(tmp);
    if (!dts.includes("'./api.js'")) throw new Error('dist/index.d.ts no longer imports ./api.js: update the CommonJS rewrite below');
    fs.writeFileSync(path.join(tmp, 'index.js'), transpile(source, ts.ModuleKind.ESNext));
    fs.writeFileSync(path.join(tmp, 'index.cjs'), transpile(source, ts.ModuleKind.CommonJS));
    fs.writeFileSync(path.join(tmp, 'api.d.ts'), api);
    fs.writeFileSync(path.join(tmp, 'api.d.cts'), api);
    // In a .d.cts, './api.js' would name the ESM copy; the CommonJS declarations use their own.
    fs.writeFileSync(path.join(tmp, 'index.d.cts'), dts.replaceAll("'./api.js'", "'./api.cjs'"));
    fs.rmSync(DIST, { recursive: true, force: true });
    fs.renameSync(tmp, DIST);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  build();
  console.log(`built ${path.relative(process.cwd(), DIST) || '.'}: ${fs.readdirSync(DIST).sort().join(' ')}`);
}
