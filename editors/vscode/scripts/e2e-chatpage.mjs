// The Chat view of a code-server window, driven the way the chat and hooks suites both drive it (e2e-chat.mjs,
// e2e-hooks.mjs): the recorded chat requests, what a message's text is, focusing the chat input past the
// notification toasts, sending a turn and waiting for the request it causes, whether Copilot Chat runs in the
// extension host. No state of its own: the page, the stub and the user-data folder are passed in.
import fs from 'node:fs';
import path from 'node:path';
import { sleep, waitFor } from './e2e-lib.mjs';

/** The OpenAI-style chat requests the stub recorded, in order: {seq, body}. */
export const chatRequests = (stub) =>
  stub.requests.filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions').map((r) => ({ seq: r.seq, body: JSON.parse(r.body) }));
/** A message's text, whether its content is a string or a list of parts. */
export const textOf = (content) =>
  typeof content === 'string' ? content : Array.isArray(content) ? content.map((p) => p?.text ?? '').join('') : '';
export const systemMessage = (body) => textOf(body.messages.find((m) => m.role === 'system')?.content);
export const count = (haystack, needle) => haystack.split(needle).length - 1;

/** The extension host logs of a user-data folder (one per window session). */
export function extensionHostLogs(userData) {
  const logs = path.join(userData, 'logs');
  const hostLogs = [];
  try {
    for (const session of fs.readdirSync(logs)) {
      for (const host of fs.readdirSync(path.join(logs, session)).filter((d) => d.startsWith('exthost'))) {
        hostLogs.push(path.join(logs, session, host, 'remoteexthost.log'));
      }
    }
  } catch {
    return [];
  }
  return hostLogs;
}

/** Whether VS Code's extension host runs GitHub Copilot Chat (which provides the chat's models: its log names it);
 * logs in `skip` (an earlier start's) do not count. */
export function copilotInExtensionHost(userData, skip = new Set()) {
  return extensionHostLogs(userData).some(
    (file) => !skip.has(file) && fs.existsSync(file) && fs.readFileSync(file, 'utf8').includes('GitHub.copilot-chat'),
  );
}

/** The text of the chat input's toolbar (the mode, then the model picker's label). */
export const modelPickerText = (page) =>
  page.evaluate(() => document.querySelector('.interactive-input-part .chat-input-toolbars')?.textContent ?? document.querySelector('.interactive-input-part')?.textContent ?? '');
export const inChatInput = (page) => page.evaluate(() => !!document.activeElement?.closest('.interactive-input-part'));

/** Close the notification toasts (VS Code 1.139 says its Ollama provider is deprecated, over the chat input). */
export async function clearToasts(page) {
  await page
    .evaluate(() => {
      for (const b of document.querySelectorAll('.notifications-toasts .notification-toast .codicon-notifications-clear, .notifications-toasts .notification-toast .codicon-close')) b.click();
    })
    .catch(() => undefined);
}

export async function focusChatInput(page) {
  for (let attempt = 0; attempt < 5; attempt++) {
    await clearToasts(page);
    await page.locator('.interactive-input-part .monaco-editor .view-lines').first().click({ force: true });
    await sleep(200);
    if (await inChatInput(page)) return;
  }
  throw new Error('the chat input does not take the focus');
}

/** Send one chat message; resolves to the requests it caused (the first one, then `rounds - 1` tool rounds). */
export async function sendChatTurn(page, stub, text, { rounds = 1 } = {}) {
  const before = chatRequests(stub).length;
  await focusChatInput(page);
  await page.keyboard.type(text);
  if (!(await inChatInput(page))) throw new Error('the focus left the chat input while typing');
  await page.keyboard.press('Enter');
  const got = await waitFor(
    `${rounds} chat request(s) for "${text}"`,
    () => {
      const fresh = chatRequests(stub).slice(before);
      const first = fresh.findIndex((r) => JSON.stringify(r.body.messages.at(-1)).includes(text));
      return first >= 0 && fresh.length - first >= rounds ? fresh.slice(first, first + rounds) : undefined;
    },
    90_000,
    250,
  );
  // The stub answers at once; give VS Code a moment to show it before the next message (one typed while it is
  // busy is queued, and still found above by its text).
  await sleep(2_000);
  return got;
}
