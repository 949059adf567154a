// client.mjs BASE_URL: the official OpenAI client library (npm `openai`)
// against `linattn serve`: chat completions with and without streaming,
// and completions; each streamed text must equal the same request's
// non-streamed text (greedy, so the same tokens), and be non-empty.
import OpenAI from "openai";
import assert from "node:assert/strict";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "sesame" });
const models = await client.models.list();
const model = models.data[0].id;
assert.ok(model, "GET /v1/models names the model");

const messages = [{ role: "user", content: "And God said" }];
const chat = await client.chat.completions.create({ model, messages, max_tokens: 30,
                                                    temperature: 0 });
const answer = chat.choices[0].message.content;
assert.equal(chat.choices[0].message.role, "assistant");
assert.ok(answer.length > 0, "a chat answer");
assert.ok(chat.usage.prompt_tokens > 0 && chat.usage.completion_tokens > 0, "usage counts");

let streamed = "", chunks = 0, finish = null;
const stream = await client.chat.completions.create({ model, messages, max_tokens: 30,
                                                      temperature: 0, stream: true });
for await (const chunk of stream) {
  streamed += chunk.choices[0]?.delta?.content ?? "";
  finish = chunk.choices[0]?.finish_reason ?? finish;
  chunks++;
}
assert.ok(chunks > 2, "several server-sent events");
assert.equal(streamed, answer, "streamed chat = the same request not streamed");
assert.ok(finish === "stop" || finish === "length", `finish_reason ${finish}`);

const done = await client.completions.create({ model, prompt: "In the beginning", max_tokens: 40,
                                               temperature: 0 });
const text = done.choices[0].text;
assert.equal(text.length, 40, "40 tokens of a byte-level model: 40 characters");
let joined = "";
for await (const chunk of await client.completions.create({ model, prompt: "In the beginning",
                                                            max_tokens: 40, temperature: 0,
                                                            stream: true }))
  joined += chunk.choices[0]?.text ?? "";
assert.equal(joined, text, "streamed completion = not streamed");

// a seeded draw is the same twice; an error comes back as the library's APIError
const a = await client.completions.create({ model, prompt: "Hello", max_tokens: 20, seed: 7 });
const b = await client.completions.create({ model, prompt: "Hello", max_tokens: 20, seed: 7 });
assert.equal(a.choices[0].text, b.choices[0].text, "the same seed, the same text");
await assert.rejects(client.completions.create({ model, prompt: "x", n: 2 }),
                     (e) => e.status === 400 && /n/.test(e.message));
console.log(`openai client: chat ${answer.length} chars in ${chunks} events, completion ` +
            `${text.length} chars: ok`);
