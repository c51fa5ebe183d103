// Seeds published indexed payments straight into PostgreSQL with INSERT ... SELECT generate_series.
// Row i goes to recipient i % R with sequence i / R + 1, two payments per block, so sequences
// follow chain order as the publisher would assign them. Hashes are md5-derived filler.
import pg from 'pg';

const USDG = '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168';
const CHUNK = 100_000;

const INSERT = `
insert into indexed_payments (chain_id, token, payment_id, payer, recipient, value, authorization_nonce,
  transaction_hash, log_index, block_number, block_hash, block_timestamp, facilitator, indexed_at,
  recipient_sequence, signature, signer, published_at)
select 4663, $1,
  '0x' || md5('p' || i) || md5('q' || i),
  $2,
  ($3::text[])[(i % $4) + 1],
  (i % 100000 + 1)::numeric,
  '0x' || md5('n' || i) || md5('o' || i),
  '0x' || md5('t' || i) || md5('u' || i),
  (i % 2) * 2 + 1,
  1000 + i / 2,
  '0x' || md5('b' || (i / 2)) || md5('c' || (i / 2)),
  1700000000 + i / 2,
  $5, now(),
  i / $4 + 1,
  '0x' || md5('s' || i) || md5('r' || i) || md5('v' || i) || md5('w' || i) || '1b',
  $6, now()
from generate_series($7::bigint, $8::bigint) as i`;

export async function seedIndexedPayments(url: string, recipients: string[], total: number, progress: (done: number) => void) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const payer = '0x1111111111111111111111111111111111111111';
    const relayer = '0x2222222222222222222222222222222222222222';
    const signer = '0x3333333333333333333333333333333333333333';
    for (let start = 0; start < total; start += CHUNK) {
      const end = Math.min(total, start + CHUNK) - 1;
      await client.query(INSERT, [USDG, payer, recipients, recipients.length, relayer, signer, start, end]);
      progress(end + 1);
    }
    await client.query(
      `insert into recipient_sequences (chain_id, recipient, last_sequence)
       select chain_id, recipient, max(recipient_sequence) from indexed_payments group by chain_id, recipient`,
    );
    await client.query('vacuum analyze indexed_payments');
  } finally {
    await client.end();
  }
}
