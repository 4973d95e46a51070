/**
 * Local only: a RabbitMQ node loads every module of the applications it will run in one batch, before it boots, rather
 * than one module at a time while it boots (issue 24's faster start).
 *
 * Why: RabbitMQ 3.10 scans the attributes of every module of every loaded application twice while it boots (the
 * feature flags, then the boot steps: rabbit_misc:all_module_attributes/1 calls Module:module_info(attributes)), so an
 * interactive-mode VM loads about a thousand modules one by one, each a code-server round trip and its own code
 * staging. Measured on this machine (2 cores, RabbitMQ 3.10.8, OTP 25.2.3), one node alone: "time to find supported
 * feature flags: 1071684 us" and 2.6 s from "== Boot steps ==" to "pre_boot"; with the modules loaded in one
 * code:atomic_load/1 beforehand (1.4 s for 1,038 modules) both scans take 0.5 s together and the node answers in
 * 2.6-3.4 s instead of 5.2-5.8 s. The broker runs the same code either way: only when it is loaded changes.
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
 */

/** An application name as an unquoted Erlang atom: what a plugin name is. */
const ERLANG_ATOM = /^[a-z][a-zA-Z0-9_]*$/;

/**
 * The Erlang expression that loads the applications' modules in one batch. It holds no single quote, so that it
 * can be quoted with single quotes in ERL_AFLAGS (erlexec splits that variable like a shell would).
 */
export function preloadExpression(rootApplications: readonly string[]): string {
  const bad = rootApplications.find((name) => !ERLANG_ATOM.test(name));
  if (bad !== undefined) throw new Error(`cannot preload application "${bad}": not a plain Erlang atom`);
  const roots = `[${rootApplications.join(', ')}]`;
  return [
    'os:unsetenv("ERL_AFLAGS"),',
    'T0 = erlang:monotonic_time(millisecond),',
    'try',
    '  Props = fun(A) -> case code:where_is_file(atom_to_list(A) ++ ".app") of non_existing -> []; F -> ' +
      'case file:consult(F) of {ok, [{application, A, P}]} -> P; _ -> [] end end end,',
    '  Walk = fun W(A, {Seen, Ms}) -> case lists:member(A, Seen) of true -> {Seen, Ms}; false -> P = Props(A), ' +
      'lists:foldl(W, {[A | Seen], proplists:get_value(modules, P, []) ++ Ms}, ' +
      'proplists:get_value(applications, P, []) ++ proplists:get_value(included_applications, P, [])) end end,',
    `  {Apps, All} = lists:foldl(Walk, {[], []}, ${roots}),`,
    '  Load = [M || M <- lists:usort(All), code:is_loaded(M) =:= false],',
    '  Result = case code:atomic_load(Load) of ok -> ok; {error, Refused} -> ' +
      'code:atomic_load(Load -- [M || {M, _} <- Refused]) end,',
    '  io:format("rmqbench: preloaded ~b modules of ~b applications in ~b ms: ~p~n", ' +
      '[length(Load), length(Apps), erlang:monotonic_time(millisecond) - T0, Result])',
    'catch Class:Reason -> io:format("rmqbench: preload skipped: ~p:~p~n", [Class, Reason])',
    'end.',
  ].join(' ');
}

/** The environment variable that makes a node preload: ERL_AFLAGS with the expression as one -eval argument. */
export function preloadEnvironment(rootApplications: readonly string[]): { ERL_AFLAGS: string } {
  return { ERL_AFLAGS: `-eval '${preloadExpression(rootApplications)}'` };
}
