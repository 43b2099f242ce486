// An agent loop on the Vercel AI SDK: generateText with one tool and several steps (stopWhen). It
// reads nothing but the provider's environment (OPENAI_BASE_URL, OPENAI_API_KEY). TOOLSTREAM_STREAM=1
// runs the same loop with streamText, which reads the stream (generateText asks for no stream).
import { openai } from "@ai-sdk/openai";
import { generateText, streamText, stepCountIs, tool } from "ai";
import { z } from "zod";

// One tool, offered under the tool names the corpus's recordings call.
const lookup = tool({
  description: "Look something up.",
  inputSchema: z.object({}).passthrough(),
  execute: async (input) => `ok (${Object.keys(input).join(", ")})`,
});
const names = ["get_weather", "get_time", "get_current_time", "web_search", "search_text", "read_file",
  "list_issues", "get_file_contents", "list_open_tabs", "code_execution", "bocha_websearch_tool"];
const tools = Object.fromEntries(names.map((name) => [name, lookup]));

const settings = {
  model: openai.chat("gpt-4.1"),
  tools,
  stopWhen: stepCountIs(4),
  maxRetries: 0,
  prompt: "Weather and time in Paris?",
};
if (process.env.TOOLSTREAM_STREAM === "1") {
  const result = streamText({ ...settings, onError: ({ error }) => { console.error(String(error)); } });
  console.log(await result.text);
} else {
  console.log((await generateText(settings)).text);
}
