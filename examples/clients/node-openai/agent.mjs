// An agent loop on the official OpenAI Node SDK with one tool. It reads nothing but the SDK's own
// environment (OPENAI_BASE_URL, OPENAI_API_KEY): pointed at `toolstream serve`, it runs unchanged.
import OpenAI from "openai";

const client = new OpenAI({ maxRetries: 0 });
const tools = [{ type: "function", function: { name: "lookup", parameters: { type: "object" } } }];
const lookup = (name, args) => `${name}: ok (${Object.keys(args).join(", ")})`; // the one tool

const messages = [{ role: "user", content: "Weather and time in Paris?" }];
for (let step = 0; step < 4; step++) {
  const stream = client.chat.completions.stream({ model: "gpt-4.1", messages, tools });
  const message = (await stream.finalChatCompletion()).choices[0].message;
  messages.push(message);
  if (!message.tool_calls?.length) break;
  for (const call of message.tool_calls) {
    let content;
    try {
      content = lookup(call.function.name, JSON.parse(call.function.arguments || "{}"));
    } catch (error) {
      content = `error: ${error.message}`; // told to the model, as agent loops do
    }
    messages.push({ role: "tool", tool_call_id: call.id, content });
  }
}
console.log(messages.at(-1).content ?? "");
