// A warm Node process for `toolstream check --client` (see node_warm.py): it runs one case at a
// time, each in a fresh worker thread (its own V8 isolate and module graph, so the program and its
// SDK start from nothing, as in `node SCRIPT`), and saves the process's own start on every case.
//
//   node node_warm.mjs FD        control messages on the socket FD (JSON lines), the case's output on 1 and 2
//
// In:  {"op": "run", "script": PATH, "url": URL, "argv": [...], "env": {...}}
//      {"op": "kill"}                  end the running case (its worker is terminated)
//      {"op": "flush", "marker": HEX}  write the marker on stdout and stderr: all before it is the case's
// Out: {"op": "ready", "pid": N}
//      {"op": "unsupported", "what": WHY}   the case did what a worker cannot do as a process does
//      {"op": "exit", "code": N}       the case's worker ended, all its output written
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import { inspect } from "node:util";

if (isMainThread) {
  const { createInterface } = await import("node:readline"); // the parent's alone: no case loads them
  const { Socket } = await import("node:net");
  const control = new Socket({ fd: Number(process.argv[2]), readable: true, writable: true });
  const send = (message) => control.write(JSON.stringify(message) + "\n");
  let worker = null;
  createInterface({ input: control, crlfDelay: Infinity }).on("line", (line) => {
    const message = JSON.parse(line);
    if (message.op === "run") worker = start(message);
    else if (message.op === "kill") worker?.terminate();
    else if (message.op === "flush") {
      process.stdout.write(message.marker); // pipes are written synchronously on Linux: in order
      process.stderr.write(message.marker);
    }
  });
  control.on("end", () => process.exit(0)); // the harness is gone
  control.on("error", () => process.exit(0));
  send({ op: "ready", pid: process.pid });

  function start(message) {
    const running = new Worker(new URL(import.meta.url), {
      argv: message.argv,
      env: message.env,
      execArgv: [], // as `node SCRIPT` has: the V8 flags this process started with are not the program's
      workerData: { script: message.script, url: message.url },
      stdout: true,
      stderr: true,
    });
    // The case has ended when its worker has exited and both of its streams are read out.
    let left = 3;
    let code = null;
    const done = () => {
      if (--left === 0) {
        worker = null;
        send({ op: "exit", code });
      }
    };
    running.stdout.on("data", (data) => process.stdout.write(data)).on("end", done);
    running.stderr.on("data", (data) => process.stderr.write(data)).on("end", done);
    running.on("error", () => {}); // printed by the worker itself, as `node SCRIPT` prints it
    // What the case called that a worker cannot do: the harness runs it again cold.
    running.on("message", (said) => {
      if (said?.toolstreamUnsupported) send({ op: "unsupported", what: String(said.toolstreamUnsupported) });
    });
    running.on("exit", (exitCode) => {
      code = exitCode;
      done();
    });
    return running;
  }
} else {
  // The case: what `node SCRIPT ARGS` shows the program (argv[1] is the script, not this file).
  process.argv[1] = workerData.script;
  // What a worker cannot do as `node SCRIPT` does, said to the harness (which runs the case again
  // cold) before it happens: `process.chdir()` and `process.umask(mask)` throw in a worker; and
  // `process.exit()` right after more output than a pipe holds, in one stretch of code, loses the
  // output's end in a process (its writes to a pipe wait for the event loop), not in a worker.
  const refuse = (why) => parentPort.postMessage({ toolstreamUnsupported: why });
  const unsupported = { chdir: () => true, umask: (...args) => args.length > 0 };
  for (const [name, refused] of Object.entries(unsupported)) {
    const original = process[name];
    process[name] = function (...args) {
      if (refused(...args)) refuse(`it calls process.${name}(), which a worker thread cannot`);
      return original.apply(this, args);
    };
  }
  const PIPE = 65536; // what a pipe holds on Linux
  let burst = 0; // bytes written since the event loop last ran
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write;
    stream.write = function (chunk, ...rest) {
      if (burst === 0) setImmediate(() => (burst = 0));
      burst += typeof chunk === "string" ? Buffer.byteLength(chunk) : (chunk?.length ?? 0);
      return write.call(this, chunk, ...rest);
    };
  }
  const exit = process.exit;
  process.exit = function (...args) {
    if (burst > PIPE) refuse("it exits right after more output than a pipe holds (a process loses its end)");
    return exit.apply(this, args);
  };
  // A worker's uncaught error goes to its parent as an event; `node SCRIPT` prints it on stderr.
  // The monitor sees it first, and prints it only when nothing of the program's will handle it.
  process.on("uncaughtExceptionMonitor", (error) => {
    if (process.listenerCount("uncaughtException") === 0) process.stderr.write(fatal(error));
  });
  await import(workerData.url);
}

/** What `node SCRIPT` prints for an uncaught error (without the source line it points at). */
function fatal(error) {
  const shown =
    error !== null && typeof error === "object"
      ? inspect(error)
      : `${String(error)}\n(Use \`node --trace-uncaught ...\` to show where the exception was thrown)`;
  return `\n${shown}\n\nNode.js ${process.version}\n`;
}
