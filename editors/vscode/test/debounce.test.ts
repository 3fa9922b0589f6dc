import assert from 'node:assert/strict';
import { beforeEach, afterEach, describe, it, mock } from 'node:test';
import { debounce } from '../src/debounce';

describe('debounce (50 ms, trailing)', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout'] }));
  afterEach(() => mock.timers.reset());

  it('turns a burst into one call with the last arguments', () => {
    const calls: number[] = [];
    const d = debounce((n: number) => calls.push(n), 50);
    for (let i = 1; i <= 5; i++) {
      d(i);
      mock.timers.tick(10);
    }
    assert.deepEqual(calls, []);
    assert.equal(d.pending, true);
    // The last call was 10 ms ago: it fires 50 ms after itself, not after the first.
    mock.timers.tick(39);
    assert.deepEqual(calls, []);
    mock.timers.tick(1);
    assert.deepEqual(calls, [5]);
    assert.equal(d.pending, false);
  });

  it('calls again for a change after the window', () => {
    const calls: string[] = [];
    const d = debounce((s: string) => calls.push(s), 50);
    d('a');
    mock.timers.tick(50);
    d('b');
    mock.timers.tick(50);
    assert.deepEqual(calls, ['a', 'b']);
  });

  it('flush runs the pending call now, once', () => {
    const calls: string[] = [];
    const d = debounce((s: string) => calls.push(s), 50);
    d('x');
    d.flush();
    assert.deepEqual(calls, ['x']);
    mock.timers.tick(100);
    d.flush();
    assert.deepEqual(calls, ['x']);
  });

  it('cancel drops the pending call', () => {
    const calls: string[] = [];
    const d = debounce((s: string) => calls.push(s), 50);
    d('x');
    d.cancel();
    mock.timers.tick(100);
    assert.deepEqual(calls, []);
    assert.equal(d.pending, false);
  });
});
