import { createHash, createHmac } from 'node:crypto';

// AWS Signature Version 4 for JSON-protocol POSTs to the service root (KMS): what the AWS SDKs send, so any
// AWS endpoint (or a compatible one) accepts the request. https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv.html

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** Temporary credentials (STS, instance roles) carry a session token. */
  sessionToken?: string;
}

const sha256 = (data: string) => createHash('sha256').update(data).digest('hex');
const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();

/** The headers of a signed `POST /` with a JSON body and an X-Amz-Target, at `now`. */
export function signedJsonPost(
  url: URL,
  service: string,
  region: string,
  target: string,
  body: string,
  credentials: AwsCredentials,
  now = new Date(),
): Record<string, string> {
  const amzDate = now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
  const dateStamp = amzDate.slice(0, 8);
  const headers: Record<string, string> = {
    'content-type': 'application/x-amz-json-1.1',
    host: url.host,
    'x-amz-date': amzDate,
    ...(credentials.sessionToken ? { 'x-amz-security-token': credentials.sessionToken } : {}),
    'x-amz-target': target,
  };
  const names = Object.keys(headers).sort();
  const canonicalRequest = ['POST', url.pathname || '/', '', ...names.map((name) => `${name}:${headers[name]}`), '', names.join(';'), sha256(body)].join('\n');
  const scope = `${dateStamp}/${region}/${service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonicalRequest)].join('\n');
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${credentials.secretAccessKey}`, dateStamp), region), service), 'aws4_request');
  const signature = createHmac('sha256', signingKey).update(stringToSign).digest('hex');
  const { host: _host, ...sent } = headers; // fetch sets Host itself, to the same url.host
  return { ...sent, authorization: `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}` };
}
