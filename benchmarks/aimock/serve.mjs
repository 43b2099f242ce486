// aimock (@copilotkit/aimock, pinned in package.json) serving one Realtime session's tool calls:
// a user message "Weather in Paris?" answered with two function calls. Prints its URL, then
// serves until its stdin closes (benchmarks/bench_websocket.py holds it open).
import { LLMock } from "@copilotkit/aimock";

const mock = new LLMock({ port: 0, host: "127.0.0.1", logLevel: "silent" });
mock.onMessage("Weather in Paris?", {
  toolCalls: [
    { name: "get_weather", arguments: { city: "Paris" } },
    { name: "get_time", arguments: { city: "Paris" } },
  ],
});
await mock.start();
console.log(mock.url);
process.stdin.resume();
process.stdin.on("end", async () => {
  await mock.stop();
  process.exit(0);
});
