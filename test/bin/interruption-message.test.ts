import { interruptionMessage } from '../../bin/commands/run';

describe('what an interrupted local run records', () => {
  test('names the signal, Ctrl-C for SIGINT, and a closed output as such', () => {
    expect(interruptionMessage('SIGINT')).toBe('interrupted by a signal (Ctrl-C)');
    expect(interruptionMessage('SIGTERM')).toBe('interrupted by a signal (SIGTERM)');
    expect(interruptionMessage('SIGHUP')).toBe('interrupted by a signal (SIGHUP)');
    expect(interruptionMessage('output closed')).toBe('interrupted: its output could no longer be written (EPIPE)');
  });
});
