// The baseline: a bare Fastify hello-world, nothing else.
import Fastify from 'fastify';

const app = Fastify();
app.get('/health', async () => ({ hello: 'world' }));
const address = await app.listen({ host: '127.0.0.1', port: 0 });
console.log(`listening ${address}`);
