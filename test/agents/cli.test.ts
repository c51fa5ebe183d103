// `tollgate credits grant` as an operator runs it: with no instance up, the CLI opens the data dir itself;
// the grant is a ledger transfer with its note, and bad input changes nothing.
import { afterAll, describe, expect, it } from 'vitest';
import { cli, dataDirs } from '../helpers/cli.js';

const dirs = dataDirs();
afterAll(dirs.removeAll);

describe('tollgate credits grant', () => {
  it('grants credits to a user and prints the balance; refuses bad amounts', { timeout: 120_000 }, async () => {
    const env = { TOLLGATE_DATA_DIR: dirs.migrated(), API_PORT: '0', DEVCHAIN_PORT: '0' };
    const first = await cli(env, 'credits', 'grant', '--sub', 'alice', '--cents', '2500', '--note', 'welcome credit');
    expect(first, first.stderr).toMatchObject({ code: 0 });
    expect(first.stdout.trim()).toBe('granted 2500 cents to alice; balance 2500 cents');
    const second = await cli(env, 'credits', 'grant', '--sub', 'alice', '--cents', '500');
    expect(second.stdout.trim()).toBe('granted 500 cents to alice; balance 3000 cents');
    // Refused before an instance is opened: one per kind of mistake.
    const refused = await cli(env, 'credits', 'grant', '--sub', 'alice', '--cents', '1.5');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('--cents');
    const noUser = await cli(env, 'credits', 'grant', '--cents', '5');
    expect(noUser.code).not.toBe(0);
    expect(noUser.stderr).toContain('--sub');
  });
});
