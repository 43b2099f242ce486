// An agent loop on the official Anthropic Node SDK with one tool. It reads nothing but the SDK's
// own environment (ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY): pointed at `toolstream serve`, it runs
// unchanged.
import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic({ maxRetries: 0 });
const tools = [{ name: "lookup", input_schema: { type: "object" } }];
const lookup = (name, input) => `${name}: ok (${Object.keys(input ?? {}).join(", ")})`; // the one tool

const messages = [{ role: "user", content: "Weather and time in Paris?" }];
for (let step = 0; step < 4; step++) {
  const stream = client.messages.stream({ model: "claude-sonnet-4-5", max_tokens: 1024, messages, tools });
  const message = await stream.finalMessage();
  messages.push({ role: "assistant", content: message.content });
  const calls = message.content.filter((block) => block.type === "tool_use");
  if (!calls.length) break;
  messages.push({
    role: "user",
    content: calls.map((call) => ({ type: "tool_result", tool_use_id: call.id, content: lookup(call.name, call.input) })),
  });
}
console.log(JSON.stringify(messages.at(-1).content).slice(0, 200));
