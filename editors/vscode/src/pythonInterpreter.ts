/** The Python extension's active interpreter, when ms-python.python is installed (optional). */
import * as vscode from 'vscode';

const PYTHON_EXTENSION_ID = 'ms-python.python';
const ACTIVATE_TIMEOUT_MS = 15_000;

/* The few parts of the Python extension's API used here (it publishes no typings package we can depend on). */
interface PythonApi {
  environments?: {
    getActiveEnvironmentPath?(resource?: vscode.Uri): { id: string; path: string } | undefined;
    resolveEnvironment?(env: { id: string; path: string } | string): Promise<
      { executable?: { uri?: vscode.Uri } } | undefined
    >;
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
  settings?: {
    getExecutionDetails?(resource?: vscode.Uri): { execCommand?: string[] } | undefined;
  };
}

function withTimeout<T>(promise: Thenable<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}

async function pythonApi(): Promise<PythonApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonApi>(PYTHON_EXTENSION_ID);
  if (!ext) return undefined;
  return ext.isActive ? ext.exports : await withTimeout(ext.activate(), ACTIVATE_TIMEOUT_MS);
}

/** The interpreter command line the Python extension uses for `resource`, or undefined. */
export async function activePythonInterpreter(
  resource: vscode.Uri | undefined,
  log: (line: string) => void,
): Promise<string[] | undefined> {
  try {
    const api = await pythonApi();
    if (!api) return undefined;
    const envPath = api.environments?.getActiveEnvironmentPath?.(resource);
    if (envPath && api.environments?.resolveEnvironment) {
      const env = await api.environments.resolveEnvironment(envPath);
      const exe = env?.executable?.uri?.fsPath;
      if (exe) return [exe];
    }
    const exec = api.settings?.getExecutionDetails?.(resource)?.execCommand;
    if (Array.isArray(exec) && exec.length > 0 && exec.every((p) => typeof p === 'string')) return exec;
  } catch (err) {
    log(`Could not ask the Python extension for its interpreter: ${err instanceof Error ? err.message : String(err)}`);
  }
  return undefined;
}

/** Subscribe to interpreter changes in the Python extension (no-op when it is missing). */
export async function onPythonInterpreterChanged(listener: () => void): Promise<vscode.Disposable | undefined> {
  const ext = vscode.extensions.getExtension<PythonApi>(PYTHON_EXTENSION_ID);
  if (!ext || !ext.isActive) return undefined;
  return ext.exports.environments?.onDidChangeActiveEnvironmentPath?.(() => listener());
}
