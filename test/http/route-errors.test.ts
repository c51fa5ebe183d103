// Every documented route declares its errors (issue 48 item 6): an operation whose OpenAPI answers name no 4xx or
// 5xx makes the typed client's `error` `never`, and the client README's own error handling stops compiling.
import path from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { repositoryRoot } from '../helpers/readme.js';

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp();
}, 120_000);
afterAll(async () => app?.close());

describe('route errors in the API contract', () => {
  it('every documented operation of every origin declares at least one error answer', async () => {
    const undeclared: string[] = [];
    let operations = 0;
    for (const [origin, instance] of Object.entries(app.origins)) {
      const doc = (await instance!.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, { responses?: Record<string, unknown> }>> };
      for (const [route, methods] of Object.entries(doc.paths)) {
        for (const [method, operation] of Object.entries(methods)) {
          operations += 1;
          if (!Object.keys(operation.responses ?? {}).some((status) => /^[45]/.test(status))) undeclared.push(`${origin} ${method.toUpperCase()} ${route}`);
        }
      }
    }
    expect(operations).toBeGreaterThan(100);
    expect(undeclared).toEqual([]);
  });

  it("the client README's error handling compiles against POST /v1/projects and POST …/api-keys", { timeout: 120_000 }, () => {
    const file = path.join(repositoryRoot, 'packages/client/src/readme-error-handling.check.ts');
    const source = `import { createTollgateClient } from './index.js';
const tollgate = createTollgateClient({ baseUrl: 'http://127.0.0.1:8402', token: 't' });
export async function run(): Promise<void> {
  const project = await tollgate.POST('/v1/projects', { body: { name: 'shop' } });
  if (project.error) console.error(\`\${project.response.status}: \${project.error.code} \${project.error.message}\`);
  const key = await tollgate.POST('/v1/projects/{projectId}/api-keys', { params: { path: { projectId: 'p' } }, body: { name: 'ci' } });
  if (key.error) console.error(\`\${key.response.status}: \${key.error.code} \${key.error.message}\`);
}
`;
    const host = ts.createCompilerHost({});
    const readFile = host.readFile.bind(host);
    host.readFile = (name) => (path.resolve(name) === file ? source : readFile(name));
    const fileExists = host.fileExists.bind(host);
    host.fileExists = (name) => path.resolve(name) === file || fileExists(name);
    const program = ts.createProgram([file], { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, skipLibCheck: true }, host);
    const diagnostics = ts.getPreEmitDiagnostics(program).filter((d) => d.file && path.resolve(d.file.fileName) === file);
    expect(diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))).toEqual([]);
  });
});
