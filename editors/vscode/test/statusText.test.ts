import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countIncluded, formatCount, formatRefreshSummary, formatStatus, formatTokens, plural } from '../src/statusText';

describe('status bar text', () => {
  it('shows the exact token count, grouped', () => {
    const view = formatStatus({ kind: 'ready', tokens: { total: 4321, encoding: 'o200k_base', estimated: false }, memoryFiles: 2 });
    assert.equal(view.text, '$(sparkle) 4,321 tokens');
    assert.equal(view.command, 'contextCompanion.showInstruction');
    assert.equal(view.warning, false);
    assert.match(view.tooltip, /4,321 tokens \(o200k_base\), with 2 memory files\. Click to show it\./);
  });

  it('puts ~ in front of an estimated count and says why', () => {
    const view = formatStatus({ kind: 'ready', tokens: { total: 987, encoding: 'o200k_base', estimated: true }, memoryFiles: 1 });
    assert.equal(view.text, '$(sparkle) ~987 tokens');
    assert.equal(view.label, 'Context Companion: ~987 tokens');
    assert.match(view.tooltip, /about 987 tokens \(estimated; o200k_base could not be loaded\), with 1 memory file\./);
  });

  it('treats a missing estimated flag as exact', () => {
    assert.equal(formatTokens({ total: 12 }), '12');
  });

  it('changes when one token is added (a one-line memory edit must show)', () => {
    const a = formatStatus({ kind: 'ready', tokens: { total: 12345 }, memoryFiles: 1 }).text;
    const b = formatStatus({ kind: 'ready', tokens: { total: 12346 }, memoryFiles: 1 }).text;
    assert.notEqual(a, b);
  });

  it('shows starting, stopped and error states with a useful click', () => {
    assert.match(formatStatus({ kind: 'starting' }).text, /loading~spin/);
    const stopped = formatStatus({ kind: 'stopped' });
    assert.equal(stopped.command, 'contextCompanion.restartServer');
    const error = formatStatus({ kind: 'error', message: 'The server package is not installed for python3.' });
    assert.equal(error.warning, true);
    assert.equal(error.command, 'contextCompanion.restartServer');
    assert.match(error.tooltip, /^Context Companion: The server package is not installed for python3\.\nClick to restart/);
  });

  it('no server yet is no error: a neutral "install needed" (or "Python needed") that brings the offer back', () => {
    const offer = formatStatus({ kind: 'notInstalled', message: 'No server is installed (python3 cannot import context_companion).' });
    assert.equal(offer.text, '$(cloud-download) Context Companion: install needed');
    assert.equal(offer.warning, false);
    assert.equal(offer.label, 'Context Companion: server not installed');
    assert.equal(offer.command, 'contextCompanion.restartServer');
    assert.match(offer.tooltip, /No server is installed .*\nClick to see the offer again/);
    const python = formatStatus({ kind: 'notInstalled', message: 'The server needs Python 3.10 or newer', pythonMissing: true });
    assert.equal(python.text, '$(info) Context Companion: Python needed');
    assert.equal(python.warning, false);
    assert.doesNotMatch(python.label, /error/);
  });

  it('groups large numbers', () => {
    assert.equal(formatCount(1234567), '1,234,567');
    assert.equal(formatCount(0), '0');
  });
});

describe('refresh summary', () => {
  it('says "N memory files · T tokens"', () => {
    assert.equal(
      formatRefreshSummary({
        changed: true,
        tokens: { total: 4210, estimated: false },
        memoryFiles: [
          { path: 'AGENTS.md', included: true },
          { path: 'sub/AGENTS.md', included: false, reason: 'no open file under sub/' },
          { path: '~/.gemini/GEMINI.md', included: true },
        ],
      }),
      '2 memory files · 4,210 tokens',
    );
  });

  it('handles one file, an estimated count and a bare number', () => {
    assert.equal(formatRefreshSummary({ tokens: { total: 50, estimated: true }, memoryFiles: ['AGENTS.md'] }), '1 memory file · ~50 tokens');
    assert.equal(formatRefreshSummary({ tokens: 7, memoryFiles: [] }), '0 memory files · 7 tokens');
    assert.equal(formatRefreshSummary({}), '0 memory files');
  });

  it('counts included files only', () => {
    assert.equal(countIncluded([{ path: 'a', included: false }, { path: 'b' }, 'c']), 2);
    assert.equal(countIncluded(undefined), 0);
  });

  it('says one memory file in the singular (the memory picker: "1 memory file, 1 included")', () => {
    assert.equal(plural(1, 'memory file', 'memory files'), '1 memory file');
    assert.equal(plural(1234, 'memory file', 'memory files'), '1,234 memory files');
  });
});
