// Builds the publishable package into dist/ from src/ with TypeScript (`npm run build`, and `prepack`), per module
// of src/ (index, consume):
//   x.js   + x.d.ts      ESM, for `import`
//   x.cjs  + x.d.cts     CommonJS, for `require` (openapi-fetch ships CommonJS too, so it stays a dependency); their
//                        relative imports name the .cjs copies
//   api.d.ts + api.d.cts the generated types (src/api.d.ts), one copy per module format
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

const transpile = (source, module, fileName) =>
  ts.transpileModule(source, { compilerOptions: { module, target: ts.ScriptTarget.ES2022, esModuleInterop: true }, fileName }).outputText;

/** Each module's .d.ts from a type-checked program over src/ (fails on any type error). */
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
}

/** The package's modules: every `.ts` of src/ but the generated declarations. */
const modules = () => fs.readdirSync(SRC).filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts')).map((file) => file.slice(0, -3));

/** In CommonJS output, `./x.js` names the ESM copy: each module requires (and its declarations import) `./x.cjs`. */
const toCommonJs = (text) => text.replace(/(['"])\.\/([\w-]+)\.js\1/g, '$1./$2.cjs$1');

export function build() {
  // Built beside dist/ and renamed into place, so a reader never sees half a build.
  const tmp = fs.mkdtempSync(path.join(PKG, 'dist.tmp-'));
  try {
    const api = fs.readFileSync(path.join(SRC, 'api.d.ts'), 'utf8');
    declarations(tmp);
    if (!fs.readFileSync(path.join(tmp, 'index.d.ts'), 'utf8').includes("'./api.js'")) throw new Error('dist/index.d.ts no longer imports ./api.js: update the CommonJS rewrite below');
    for (const name of modules()) {
      const source = fs.readFileSync(path.join(SRC, `${name}.ts`), 'utf8');
      fs.writeFileSync(path.join(tmp, `${name}.js`), transpile(source, ts.ModuleKind.ESNext, `${name}.ts`));
      fs.writeFileSync(path.join(tmp, `${name}.cjs`), toCommonJs(transpile(source, ts.ModuleKind.CommonJS, `${name}.ts`)));
      fs.writeFileSync(path.join(tmp, `${name}.d.cts`), toCommonJs(fs.readFileSync(path.join(tmp, `${name}.d.ts`), 'utf8')));
    }
    fs.writeFileSync(path.join(tmp, 'api.d.ts'), api);
    fs.writeFileSync(path.join(tmp, 'api.d.cts'), api);
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
