// The browser side of a chat app on the Vercel AI SDK, without a browser: the transport `useChat`
// uses (DefaultChatTransport) posts the messages to the app's chat endpoint
// (TOOLSTREAM_AI_SDK_UI_URL), `readUIMessageStream` builds the assistant message from the UI
// message stream, and once its tool parts have their input the app runs them (as `addToolOutput`
// does) and sends the messages back when `lastAssistantMessageIsCompleteWithToolCalls` says so (as
// `sendAutomaticallyWhen` does). An error in the stream is thrown (`terminateOnError`).
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithToolCalls, readUIMessageStream } from "ai";

const transport = new DefaultChatTransport({ api: process.env.TOOLSTREAM_AI_SDK_UI_URL });
const user = { id: "msg_user_1", role: "user", parts: [{ type: "text", text: "Weather and time in Paris?" }] };

async function turn(messages) {
  const stream = await transport.sendMessages({
    chatId: "chat_1", messages, trigger: "submit-message", messageId: undefined, abortSignal: undefined,
  });
  let last;
  for await (const message of readUIMessageStream({ stream, terminateOnError: true })) last = message;
  return last;
}

const assistant = await turn([user]);
if (assistant) {
  // The app's tools: each part whose input is available gets an output.
  assistant.parts = assistant.parts.map((part) => part.type.startsWith("tool-") && part.state === "input-available"
    ? { ...part, state: "output-available", output: `ok (${Object.keys(part.input ?? {}).join(", ")})` }
    : part);
  const messages = [user, assistant];
  if (lastAssistantMessageIsCompleteWithToolCalls({ messages })) {
    await turn(messages);
  }
  console.log(assistant.parts.filter((part) => part.type === "text").map((part) => part.text).join(""));
}
