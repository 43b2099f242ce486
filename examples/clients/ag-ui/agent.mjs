// A frontend on AG-UI's own client: `HttpAgent` of `@ag-ui/client` runs the agent at
// TOOLSTREAM_AG_UI_URL with frontend tools and applies the events to its messages (the client's
// default reducer, the chunk expansion and the verifier). A call is run once its TOOL_CALL_END
// came (the spec: no acting on arguments before it), with the arguments the messages then hold;
// the results go back in a new run, as a frontend tool's result is sent.
import { HttpAgent } from "@ag-ui/client";

const names = ["get_weather", "get_time", "get_current_time", "web_search", "search_text", "read_file",
  "list_issues", "get_file_contents", "list_open_tabs", "code_execution", "bocha_websearch_tool"];
const tools = names.map((name) => ({ name, description: `The ${name} tool.`, parameters: { type: "object" } }));
const agent = new HttpAgent({ url: process.env.TOOLSTREAM_AG_UI_URL, threadId: "thread_1" });
agent.addMessage({ id: "msg_user_1", role: "user", content: "Weather and time in Paris?" });

const ended = new Set();
await agent.runAgent({ runId: "run_1", tools }, { onToolCallEndEvent: ({ event }) => { ended.add(event.toolCallId); } });
const calls = agent.messages.filter((m) => m.role === "assistant").flatMap((m) => m.toolCalls ?? [])
  .filter((call) => ended.has(call.id));
if (calls.length > 0) {
  for (const call of calls) {
    let content;
    try {
      content = `ok (${Object.keys(JSON.parse(call.function.arguments || "{}")).join(", ")})`;
    } catch {
      content = "error: the arguments are not JSON";
    }
    agent.addMessage({ id: `result_${call.id}`, role: "tool", toolCallId: call.id, content });
  }
  await agent.runAgent({ runId: "run_2", tools });
}
console.log(agent.messages.filter((m) => m.role === "assistant").map((m) => m.content ?? "").join(""));
