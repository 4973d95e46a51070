/**
 * Local only: what a RabbitMQ node's Erlang VM evaluates before RabbitMQ boots (issue 24's faster start).
 *
 * 1. The preload: it loads every module of the applications it will run in one batch, rather than one module at a
 *    time while it boots.
 * 2. Turns for the preload: the seed node writes a file once its preload is done, and a joining node waits for that
 *    file before its own (local/rabbitmq-cluster.ts, preloadTurn). Three VMs loading a thousand modules at once on two
 *    cores gave the seed, which every other node waits for, a third of the machine; now it preloads with both cores,
 *    and the joining nodes preload while it boots. Measured with `npm run bench:cluster-start -- 5`, twice: 5.40 and
 *    5.51 s (7.5-8.2 CPU s) against 6.08 s before, on 2026-11-28.
 * 3. The seed gate: a node that joins the cluster waits, its modules loaded, until the seed node's AMQP listener
 *    answers (the last thing a RabbitMQ node starts), so that it joins a seed that has finished booting
 *    (local/rabbitmq-cluster.ts, localFormation).
 *
 * Why the preload: RabbitMQ 3.10 scans the attributes of every module of every loaded application twice while it
 * boots (the feature flags, then the boot steps: rabbit_misc:all_module_attributes/1 calls
 * Module:module_info(attributes)), so an interactive-mode VM loads about a thousand modules one by one, each a
 * code-server round trip and its own code staging. Measured on this machine (2 cores, RabbitMQ 3.10.8, OTP 25.2.3),
 * one node alone: "time to find supported feature flags: 1071684 us" and 2.6 s from "== Boot steps ==" to
 * "pre_boot"; with the modules loaded in one code:atomic_load/1 beforehand (1.4 s for 1,038 modules) both scans
 * take 0.5 s together and the node answers in 2.6-3.4 s instead of 5.2-5.8 s. The broker runs the same code either
 * way: only when it is loaded changes.
 *
 * Why each module is read from its application's ebin: given bare names, code:atomic_load/1 asks the code server
 * for each module's object code, which searches the code path folder by folder (every plugin's ebin). Measured here,
 * one VM alone: loading by name 1.4-1.7 s (2.0-2.5 CPU s, 0.8 s of it in the kernel), from the files 0.8 s
 * (1.5 CPU s); three nodes formed a cluster in 6.1 s (8.7 CPU s) instead of 7.6 s (11.8 CPU s), 5 rounds each,
 * `npm run bench:cluster-start -- 5`. code:atomic_load/1 takes `{Module, Filename, Binary}` for that
 * (https://www.erlang.org/doc/man/code.html#atomic_load-1), and code:which/1 then names the same file.
 *
 * How:
 * - ERL_AFLAGS "is added to the beginning of the command line for erl"
 *   (https://www.erlang.org/doc/man/erl.html#environment-variables), so its -eval runs before rabbitmq-server's own
 *   `-s rabbit boot`: "-eval expressions are evaluated sequentially with -s and -run function calls (this also in the
 *   order specified)" (https://www.erlang.org/doc/man/init.html#command-line-flags).
 * - The expression first unsets ERL_AFLAGS, so that the VMs the node starts itself (RabbitMQ's epmd starter,
 *   rabbit_nodes_common:ensure_epmd/0) do not preload too.
 * - The applications are the closure of `rabbit` and the enabled plugins over the `applications` and
 *   `included_applications` of their .app files (found on the code path, which already holds every plugin: ERL_LIBS
 *   is the plugins folder, /usr/lib/rabbitmq/lib/rabbitmq_server-3.10.8/sbin/rabbitmq-env); the modules are those
 *   their .app files list and that are not loaded yet.
 * - code:atomic_load/1 refuses a module with an -on_load function ("on_load_not_allowed",
 *   https://www.erlang.org/doc/man/code.html#atomic_load-1): those are left out and loaded as usual, on first use.
 * - Any failure is caught and printed to the node's stdout log; the node then boots as it would have without it
 *   (an -eval that crashes would stop the VM: "If any of these steps fail ... the Erlang runtime system stops").
 * - The gate polls with gen_tcp:connect/4 every 100 ms and gives up after its timeout: the node then boots anyway,
 *   and a seed that never came up is reported by the cluster's own start (a node that exits while starting).
 * - The preload's turn polls for the file every 50 ms (filelib:is_regular/1) and gives up after the same timeout. The
 *   file name is an Erlang binary of its bytes, so that no folder name needs quoting; the seed writes it after its
 *   preload whether or not that loaded anything, and a seed that dies first is reported as above.
 */

/** An application name as an unquoted Erlang atom: what a plugin name is. */
const ERLANG_ATOM = /^[a-z][a-zA-Z0-9_]*$/;

export interface NodeBootEvalOptions {
  /** Applications whose modules (with their dependencies') are loaded in one batch. @default - no preload */
  readonly preloadApplications?: readonly string[];
  /** A TCP port on 127.0.0.1 to wait for before RabbitMQ boots: the seed node's AMQP listener. @default - no wait */
  readonly waitForPort?: number;
  /** How long to wait for that port (and for `waitForFile`) before going on anyway. @default 120000 */
  readonly waitTimeoutMs?: number;
  /**
   * A file this node creates once its preload is done (the seed node): the joining nodes wait for it before their
   * own preload, so that the seed does not share the cores with them while it loads. @default - none
   */
  readonly announcePreloadFile?: string;
  /** A file to wait for before the preload: the seed node's `announcePreloadFile`. @default - no wait */
  readonly waitForFile?: string;
}

/**
 * The Erlang expression, undefined when there is nothing to do. It holds no single quote, so that it can be quoted
 * with single quotes in ERL_AFLAGS (erlexec splits that variable like a shell would).
 */
export function nodeBootExpression(options: NodeBootEvalOptions): string | undefined {
  const applications = options.preloadApplications ?? [];
  const steps = [
    ...(options.waitForFile !== undefined
      ? [waitForFileStep(options.waitForFile, options.waitTimeoutMs ?? 120_000)]
      : []),
    ...(applications.length > 0 ? [preloadStep(applications)] : []),
    ...(options.announcePreloadFile !== undefined ? [announceStep(options.announcePreloadFile)] : []),
    ...(options.waitForPort !== undefined ? [waitStep(options.waitForPort, options.waitTimeoutMs ?? 120_000)] : []),
  ];
  if (steps.length === 0) return undefined;
  return `os:unsetenv("ERL_AFLAGS"), ${steps.join(', ')}.`;
}

/** The environment for a node: ERL_AFLAGS with the expression as one -eval argument, or nothing. */
export function nodeBootEnvironment(options: NodeBootEvalOptions): { ERL_AFLAGS?: string } {
  const expression = nodeBootExpression(options);
  return expression === undefined ? {} : { ERL_AFLAGS: `-eval '${expression}'` };
}

function preloadStep(rootApplications: readonly string[]): string {
  const bad = rootApplications.find((name) => !ERLANG_ATOM.test(name));
  if (bad !== undefined) throw new Error(`cannot preload application "${bad}": not a plain Erlang atom`);
  return [
    'T0 = erlang:monotonic_time(millisecond),',
    'try',
    // An application's properties and its ebin folder (where its .app file is), or nothing when it is not installed.
    '  Props = fun(A) -> case code:where_is_file(atom_to_list(A) ++ ".app") of non_existing -> {[], none}; F -> ' +
      'case file:consult(F) of {ok, [{application, A, P}]} -> {P, filename:dirname(F)}; _ -> {[], none} end end end,',
    '  Walk = fun W(A, {Seen, Ms}) -> case lists:member(A, Seen) of true -> {Seen, Ms}; false -> {P, D} = Props(A), ' +
      'lists:foldl(W, {[A | Seen], [{M, D} || M <- proplists:get_value(modules, P, [])] ++ Ms}, ' +
      'proplists:get_value(applications, P, []) ++ proplists:get_value(included_applications, P, [])) end end,',
    `  {Apps, All} = lists:foldl(Walk, {[], []}, [${rootApplications.join(', ')}]),`,
    // Each module read from its application's own ebin: code:atomic_load/1 with a bare name searches the whole code
    // path (every plugin's ebin) for each of the thousand modules. A module whose file is not there is left out.
    '  Read = fun(M, D) -> F = filename:join(D, atom_to_list(M) ++ ".beam"), ' +
      'case file:read_file(F) of {ok, B} -> [{M, F, B}]; _ -> [] end end,',
    '  Load = lists:append([Read(M, D) || {M, D} <- lists:ukeysort(1, All), code:is_loaded(M) =:= false]),',
    '  Result = case code:atomic_load(Load) of ok -> ok; {error, Refused} -> ' +
      'code:atomic_load([L || L <- Load, not lists:keymember(element(1, L), 1, Refused)]) end,',
    '  io:format("rmqbench: preloaded ~b modules of ~b applications in ~b ms: ~p~n", ' +
      '[length(Load), length(Apps), erlang:monotonic_time(millisecond) - T0, Result])',
    'catch Class:Reason -> io:format("rmqbench: preload skipped: ~p:~p~n", [Class, Reason])',
    'end',
  ].join(' ');
}

function waitStep(port: number, timeoutMs: number): string {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`cannot wait for port ${port}`);
  return [
    'W0 = erlang:monotonic_time(millisecond),',
    'Wait = fun Poll() -> case gen_tcp:connect({127, 0, 0, 1}, ' +
      `${port}, [], 1000) of {ok, Socket} -> gen_tcp:close(Socket), ok; _ -> ` +
      `case erlang:monotonic_time(millisecond) - W0 > ${timeoutMs} of true -> timeout; ` +
      'false -> timer:sleep(100), Poll() end end end,',
    'Waited = Wait(),',
    `io:format("rmqbench: waited ~b ms for the seed node (127.0.0.1:${port}): ~p~n", ` +
      '[erlang:monotonic_time(millisecond) - W0, Waited])',
  ].join(' ');
}

/**
 * A file name as an Erlang binary of its bytes: a binary is a raw file name
 * (https://www.erlang.org/doc/apps/stdlib/unicode_usage.html#notes-about-raw-filenames), and the bytes need no quoting.
 */
function erlangFileName(path: string): string {
  return `<<${[...Buffer.from(path, 'utf8')].join(',')}>>`;
}

function announceStep(path: string): string {
  return (
    `Announced = file:write_file(${erlangFileName(path)}, <<>>), ` +
    'io:format("rmqbench: announced the preload: ~p~n", [Announced])'
  );
}

function waitForFileStep(path: string, timeoutMs: number): string {
  return [
    'F0 = erlang:monotonic_time(millisecond),',
    `WaitFile = fun PollFile() -> case filelib:is_regular(${erlangFileName(path)}) of true -> ok; false -> ` +
      `case erlang:monotonic_time(millisecond) - F0 > ${timeoutMs} of true -> timeout; ` +
      'false -> timer:sleep(50), PollFile() end end end,',
    'FileWaited = WaitFile(),',
    'io:format("rmqbench: waited ~b ms for the seed node to preload: ~p~n", ' +
      '[erlang:monotonic_time(millisecond) - F0, FileWaited])',
  ].join(' ');
}
