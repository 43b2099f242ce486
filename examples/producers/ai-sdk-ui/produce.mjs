// A producer of the AI SDK UI message stream: the `useChat` route of an app on the Vercel AI SDK,
// `streamText(...).toUIMessageStreamResponse()`, with the tools the upstream request offered as
// frontend tools (no execute: the browser runs them). The provider (TOOLSTREAM_PROVIDER: openai or
// anthropic) is the replay server (OPENAI_BASE_URL, TOOLSTREAM_BASE_URL). It prints what a
// browser sent and received as JSON lines (harness/serve/produce.py): request, response, each read.
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { convertToModelMessages, jsonSchema, streamText, tool } from "ai";

const out = (item) => process.stdout.write(JSON.stringify(item) + "\n");
const names = JSON.parse(process.env.TOOLSTREAM_TOOLS || "[]");
const model = process.env.TOOLSTREAM_MODEL;
const prompt = process.env.TOOLSTREAM_PROMPT || "Weather in Paris?";
const tools = Object.fromEntries(names.map((name) => [name, tool({
  description: `The ${name} tool.`,
  inputSchema: jsonSchema({ type: "object", additionalProperties: true }),
})]));
const provider = process.env.TOOLSTREAM_PROVIDER === "anthropic"
  ? createAnthropic({ baseURL: `${process.env.TOOLSTREAM_BASE_URL}/v1`, apiKey: process.env.ANTHROPIC_API_KEY })(model)
  : createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY }).chat(model);

const body = {
  id: "chat_1",
  messages: [{ id: "msg_user_1", role: "user", parts: [{ type: "text", text: prompt }] }],
  trigger: "submit-message",
};
out({ request: { method: "POST", url: "http://localhost:3000/api/chat",
  headers: { "content-type": "application/json" }, body } });
const result = streamText({
  model: provider, messages: await convertToModelMessages(body.messages), tools, maxRetries: 0,
});
const response = result.toUIMessageStreamResponse({ onError: (error) => String(error) });
out({ response: { status: response.status, headers: Object.fromEntries(response.headers) } });
const reader = response.body.getReader();
const decoder = new TextDecoder();
try {
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    out({ read: decoder.decode(value, { stream: true }) });
  }
  out({ end: true });
} catch (error) {
  out({ error: String(error) });
}
