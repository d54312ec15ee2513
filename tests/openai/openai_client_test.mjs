// Drives a Sluice gateway's OpenAI-compatible API with the official `openai` npm client (a real
// client none of us wrote): streams a completion and a chat completion, makes a non-streaming
// one, lists the models, and checks that an unknown model and a too-long prompt come back as the
// client's typed errors. Usage: node openai_client_test.mjs <gateway base url> <model>.
// Exit 0 when every check passed, 1 with the failed check on stderr.
import OpenAI from 'openai';

const [baseUrl, model] = process.argv.slice(2);
if (!baseUrl || !model) {
  console.error('usage: node openai_client_test.mjs http://127.0.0.1:PORT MODEL');
  process.exit(2);
}
const client = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: 'unused', maxRetries: 0 });

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
  console.log(`ok - ${what}`);
}

async function expectError(promise, status, code, what) {
  try {
    await promise;
  } catch (e) {
    check(e instanceof OpenAI.APIError, `${what}: typed APIError (${e.constructor.name})`);
    check(e.status === status, `${what}: status ${e.status} == ${status}`);
    if (code) check(e.code === code, `${what}: code ${e.code} == ${code}`);
    return;
  }
  throw new Error(`check failed: ${what} did not throw`);
}

const models = await client.models.list();
check(models.data.some((m) => m.id === model), `models.list has ${model}`);

// A streamed completion: several chunks, text assembled in order, a finish_reason at the end.
const stream = await client.completions.create({ model, prompt: 'Hello', max_tokens: 8, stream: true });
let text = '';
let chunks = 0;
let finish = null;
for await (const chunk of stream) {
  chunks += 1;
  text += chunk.choices[0]?.text ?? '';
  finish = chunk.choices[0]?.finish_reason ?? finish;
}
check(chunks >= 2, `streamed completion came in ${chunks} chunks`);
check(text.length > 0, `streamed completion text: ${JSON.stringify(text)}`);
check(finish === 'length' || finish === 'stop', `streamed finish_reason ${finish}`);

// A streamed chat completion.
const chat = await client.chat.completions.create({
  model,
  messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }],
  max_tokens: 6,
  stream: true,
});
let content = '';
let role = null;
for await (const chunk of chat) {
  role = chunk.choices[0]?.delta?.role ?? role;
  content += chunk.choices[0]?.delta?.content ?? '';
}
check(role === 'assistant', 'chat stream starts with role assistant');
check(content.length > 0, `streamed chat content: ${JSON.stringify(content)}`);

// Non-streaming, with usage.
const done = await client.completions.create({ model, prompt: 'Hello', max_tokens: 4 });
check(done.choices[0].text.length > 0, `non-streaming text: ${JSON.stringify(done.choices[0].text)}`);
check(done.usage.completion_tokens > 0 && done.usage.prompt_tokens > 0, 'non-streaming usage');

await expectError(client.completions.create({ model: 'no-such-model', prompt: 'x' }), 404,
                  'model_not_found', 'unknown model');
await expectError(client.completions.create({ model, prompt: 'x '.repeat(100000), max_tokens: 1 }),
                  400, 'context_length_exceeded', 'too-long prompt');
await expectError(client.completions.create({ model, prompt: 'x', n: 2 }), 400, null, 'n = 2');
console.log('all checks passed');
