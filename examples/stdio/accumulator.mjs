#!/usr/bin/env node
// A tool-call accumulator for OpenAI Chat Completions and Anthropic Messages streams, speaking
// the toolstream stdio protocol v2 (JSON Lines on stdin/stdout, fed events; every answer names
// the case it answers, so a stray line can never shift answers onto other cases):
//
//   toolstream check --accumulator 'cmd:node examples/stdio/accumulator.mjs'
//
// Calls are keyed the way a correct client keys them: by index AND id (OpenAI), by content-block
// index in a map of open blocks (Anthropic), never by "the current call".
import { createInterface } from "node:readline";

class OpenAIChat {
  constructor() {
    this.calls = [];          // in order of first appearance
    this.byIndex = new Map(); // index -> the call open at that index
    this.text = "";
    this.finish = null;
    this.done = false;
    this.error = null;
  }

  feed(name, data) {
    if (data === "[DONE]") { this.done = true; return; }
    if (data === null || typeof data !== "object") return;
    if (data.error) { this.error = data.error.message ?? JSON.stringify(data.error); return; }
    const choices = Array.isArray(data.choices) ? data.choices : [];
    const choice = choices.find((c) => c.index === 0) ?? (choices[0] && choices[0].index === undefined ? choices[0] : null);
    if (!choice) return;
    const delta = choice.delta ?? {};
    if (typeof delta.content === "string") this.text += delta.content;
    for (const entry of delta.tool_calls ?? []) this.route(entry);
    if (choice.finish_reason) this.finish = choice.finish_reason;
  }

  route(entry) {
    const id = typeof entry.id === "string" && entry.id !== "" ? entry.id : null; // "" is no id
    // A custom (freeform) tool call keeps its name and raw input under `custom`; its input is never JSON.
    const custom = entry.custom && (entry.type === "custom" || typeof entry.custom.input === "string" || typeof entry.custom.name === "string");
    const fn = custom ? { name: entry.custom.name, arguments: entry.custom.input } : entry.function ?? {};
    const named = typeof fn.name === "string" && fn.name !== "";
    const latest = this.calls[this.calls.length - 1];
    const withId = id === null ? undefined : this.calls.find((c) => c.id === id);
    let call;
    if (entry.index !== undefined && entry.index !== null) {
      const open = this.byIndex.get(entry.index);
      if (open === undefined) {
        call = id !== null || named ? this.start(entry.index, id) : latest;
      } else if (id !== null && open.id !== null && id !== open.id) {
        // Another id at the same index: a new parallel call when it names a function.
        call = named ? this.start(entry.index, id) : (withId ?? open);
      } else {
        call = open;
        if (call.id === null) call.id = id;
      }
    } else if (withId !== undefined) {
      call = withId;
    } else if (id !== null || (named && latest && latest.args !== "")) {
      call = this.start(null, id);
    } else {
      call = latest;
    }
    if (call === undefined) call = this.start(entry.index ?? null, id);
    if (custom) call.custom = true;
    if (named) call.name = fn.name.startsWith(call.name) ? fn.name : call.name + fn.name;
    if (typeof fn.arguments === "string") call.args += fn.arguments;
    else if (fn.arguments && typeof fn.arguments === "object") Object.assign(call.argsObject, fn.arguments);
  }

  start(index, id) {
    const call = { id, name: "", args: "", argsObject: {}, custom: false };
    this.calls.push(call);
    if (index !== null) this.byIndex.set(index, call);
    return call;
  }

  close(error) {
    const state = this.error !== null ? "error" : error !== null ? "cut" : this.done || this.finish ? "complete" : "cut";
    const final = state === "complete" || this.finish !== null;
    const calls = final ? this.calls.map((c) => c.custom ? { id: c.id, name: c.name || null, arguments: c.args, kind: "custom" } : {
      id: c.id, name: c.name || null,
      arguments: c.args === "" && Object.keys(c.argsObject).length ? c.argsObject : c.args,
    }) : [];
    return { tool_calls: calls, text: this.text, finish_reason: this.finish, state, error: this.error ?? error };
  }
}

class AnthropicMessages {
  constructor() {
    this.open = new Map(); // block index -> open block
    this.final = [];       // stopped tool_use blocks
    this.order = 0;
    this.text = "";
    this.stop = null;
    this.complete = false;
    this.error = null;
  }

  feed(name, data) {
    if (data === null || typeof data !== "object") return;
    const type = data.type ?? name;
    if (type === "error") { this.error = data.error?.message ?? "error event"; return; }
    if (type === "content_block_start") {
      const block = data.content_block ?? {};
      const open = this.open.get(data.index);
      if (open && open.id === (block.id ?? null) && open.type === block.type) return; // a duplicate start
      if (open) this.finish(data.index);
      this.open.set(data.index, {
        type: block.type, id: block.id ?? null, name: block.name ?? null,
        input: block.input ?? {}, json: "", deltas: 0, order: this.order++,
      });
    } else if (type === "content_block_delta") {
      const block = this.open.get(data.index);
      const delta = data.delta ?? {};
      if (delta.type === "text_delta") this.text += delta.text ?? "";
      if (block && delta.type === "input_json_delta") { block.json += delta.partial_json ?? ""; block.deltas++; }
    } else if (type === "content_block_stop") {
      this.finish(data.index);
    } else if (type === "message_delta") {
      if (data.delta?.stop_reason) this.stop = data.delta.stop_reason;
    } else if (type === "message_stop") {
      this.complete = true;
      for (const index of [...this.open.keys()]) this.finish(index);
    }
  }

  finish(index) {
    const block = this.open.get(index);
    this.open.delete(index);
    if (block && block.type === "tool_use") this.final.push(block);
  }

  close(error) {
    const state = this.error !== null ? "error" : this.complete && error === null ? "complete" : "cut";
    const calls = this.final.sort((a, b) => a.order - b.order).map((b) => ({
      id: b.id, name: b.name, arguments: b.deltas > 0 ? b.json : b.input,
    }));
    return { tool_calls: calls, text: this.text, finish_reason: this.stop, state, error: this.error ?? error };
  }
}

const DIALECTS = { "openai-chat": OpenAIChat, anthropic: AnthropicMessages };
let current = null;
let skip = null;
let caseId = null;

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line.trim() === "") continue;
  const message = JSON.parse(line);
  if (message.op === "start") {
    caseId = message.case;
    const Kind = DIALECTS[message.dialect];
    current = Kind ? new Kind() : null;
    skip = Kind ? null : `this example reads openai-chat and anthropic streams, not ${message.dialect}`;
  } else if (message.op === "event") {
    if (current) current.feed(message.event, message.data);
  } else if (message.op === "end") {
    const answer = { case: caseId, ...(current ? current.close(message.error) : { skip }) };
    process.stdout.write(JSON.stringify(answer) + "\n");
    current = null;
  }
}
