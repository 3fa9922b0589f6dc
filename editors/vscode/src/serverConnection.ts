/**
 * Starts, stops and talks to the Context Companion language server.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  type ErrorHandler,
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  type ServerOptions,
  State,
} from 'vscode-languageclient/node';
import { findServer } from './discovery';
import {
  bundledPlan,
  classifyProbe,
  describeSource,
  launchFolder,
  LaunchSettingError,
  type LaunchPlan,
  type ProbeOutcome,
  type ProbeResult,
  resolveLaunch,
  runProbe,
  serverSpawn,
} from './launch';
import { INSTRUCTION_CHANGED_NOTIFICATION, type InstructionChangedParams } from './protocol';
import { withMcpEndpoint } from './mcpProvider';
import { activePythonInterpreter, onPythonInterpreterChanged } from './pythonInterpreter';
import {
  type BundledWheel,
  decideServer,
  installPrerequisite,
  findBundledWheel,
  type InstallResult,
  installBundledServer,
  otherEnvs,
  readyEnv,
  runProcess,
} from './serverInstall';
import { buildServerSettings, isOwnSection, SECTION, sectionValue, serverSettingKeys } from './settingsPayload';

const CLIENT_ID = 'contextCompanion';
const CLIENT_NAME = 'Context Companion';
const STOP_TIMEOUT_MS = 3_000;
const MAX_RESTARTS = 4;
const RESTART_WINDOW_MS = 3 * 60_000;

/** Thrown by {@link ServerConnection.execute} when there is no running server to ask. */
export class ServerNotRunningError extends Error {
  constructor(readonly reason: string | undefined) {
    super(reason ? `The server is not running: ${reason}` : 'The server is not running.');
    this.name = 'ServerNotRunningError';
  }
}

export type ConnectionState =
  | { kind: 'starting' }
  | { kind: 'running' }
  | { kind: 'stopped' }
  | { kind: 'error'; message: string }
  /** No server yet, and nothing failed: the Install offer (or what it needs first) waits for the user. */
  | { kind: 'notInstalled'; message: string; pythonMissing: boolean };

export class ServerConnection implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private readonly clientHooks: ((client: LanguageClient) => void)[] = [];
  private queue: Promise<unknown> = Promise.resolve();
  private current: ConnectionState = { kind: 'stopped' };
  private readonly settingKeys: string[];
  private pythonWatch: vscode.Disposable | undefined;
  /** Start the server with `--mcp-endpoint` (set when VS Code took the MCP server definition provider). */
  mcpEndpoint = false;
  /** The server process this window started (launch mode); the language client talks over its stdio. */
  private serverProcess: ChildProcess | undefined;
  /** True between an automatic restart after a crash and the server running again. */
  private recovering = false;
  /** The plan the running (or last started) server was started with, before `--mcp-endpoint`. */
  private startedPlan: LaunchPlan | undefined;
  /** The user chose Install (or Retry): the next start installs the bundled server without asking. */
  private installApproved = false;
  private readonly extensionPath: string;
  private readonly extensionVersion: string;
  /** `<global storage>/server`: the private environments of the bundled server. */
  private readonly installRoot: string;
  private wheel: BundledWheel | undefined | null = null;

  private readonly stateEmitter = new vscode.EventEmitter<ConnectionState>();
  /** Fires on every state change (starting, running, stopped, error). */
  readonly onDidChangeState = this.stateEmitter.event;
  private readonly instructionEmitter = new vscode.EventEmitter<InstructionChangedParams>();
  /** Fires on `contextCompanion/systemInstructionChanged`. */
  readonly onDidChangeInstruction = this.instructionEmitter.event;

  constructor(
    context: vscode.ExtensionContext,
    readonly output: vscode.OutputChannel,
  ) {
    this.settingKeys = serverSettingKeys(context.extension.packageJSON);
    this.extensionPath = context.extensionPath;
    this.extensionVersion = String(context.extension.packageJSON.version ?? '');
    this.installRoot = path.join(context.globalStorageUri.fsPath, 'server');
    this.globalStorage = context.globalStorageUri.fsPath;
  }

  private readonly globalStorage: string;

  /**
   * The working folder of every process this extension starts (launch.ts {@link launchFolder}): never the
   * workspace, whose Python files `python -m`/`-c` would import.
   */
  get launchFolder(): string {
    return launchFolder(this.globalStorage);
  }

  get state(): ConnectionState {
    return this.current;
  }

  /** The process id of the server this window started and that still runs (undefined in tcp mode). */
  get serverPid(): number | undefined {
    const child = this.serverProcess;
    return child && child.exitCode === null && child.signalCode === null ? child.pid : undefined;
  }

  get running(): boolean {
    return this.current.kind === 'running' && this.client?.state === State.Running;
  }

  /** Start the server (no-op when running). Resolves once it runs or has failed; never rejects. */
  start(): Promise<void> {
    return this.serialise(() => this.safeStart());
  }

  stop(): Promise<void> {
    return this.serialise(() => this.doStop());
  }

  restart(): Promise<void> {
    return this.serialise(async () => {
      await this.doStop();
      await this.safeStart();
    });
  }

  /** Wait for pending start/stop work, then report whether the server runs. */
  async whenSettled(): Promise<ConnectionState> {
    await this.queue;
    return this.current;
  }

  /** Run a server command through workspace/executeCommand. */
  async execute<T>(command: string, arg?: object): Promise<T> {
    const client = this.client;
    if (!client || !this.running) {
      const why = this.current.kind === 'error' || this.current.kind === 'notInstalled' ? this.current.message : undefined;
      throw new ServerNotRunningError(why);
    }
    return (await client.sendRequest(ExecuteCommandRequest.type, {
      command,
      arguments: arg === undefined ? [] : [arg],
    })) as T;
  }

  /** Run `hook` on every language client before it starts (to add handlers of server messages). */
  onClient(hook: (client: LanguageClient) => void): void {
    this.clientHooks.push(hook);
  }

  /** Send a notification when running; returns whether it was sent. */
  notify(method: string, params: object): boolean {
    if (!this.client || !this.running) return false;
    this.client.sendNotification(method, params).catch((err: unknown) => {
      this.log(`Could not send ${method}: ${err instanceof Error ? err.message : String(err)}`);
    });
    return true;
  }

  /** The URI string the client uses for a document (matches didOpen). */
  asUri(uri: vscode.Uri): string {
    return this.client ? this.client.code2ProtocolConverter.asUri(uri) : uri.toString();
  }

  /** The settings sent to the server, for the folder `scope` (or the first workspace folder). */
  serverSettings(scope?: vscode.Uri): Record<string, unknown> {
    const resource = scope ?? vscode.workspace.workspaceFolders?.[0]?.uri;
    const config = vscode.workspace.getConfiguration(SECTION, resource);
    return buildServerSettings(this.settingKeys, (key) => config.inspect(key));
  }

  log(line: string): void {
    this.output.appendLine(`[client ${new Date().toLocaleTimeString()}] ${line}`);
  }

  dispose(): void {
    this.pythonWatch?.dispose();
    void this.doStop();
    this.stateEmitter.dispose();
    this.instructionEmitter.dispose();
  }

  private serialise(work: () => Promise<void>): Promise<void> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private setState(state: ConnectionState): void {
    this.current = state;
    this.stateEmitter.fire(state);
  }

  private fail(message: string): void {
    this.log(message);
    this.setState({ kind: 'error', message });
  }

  private async safeStart(): Promise<void> {
    try {
      await this.doStart();
    } catch (err) {
      this.fail(`The server did not start: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private async doStart(): Promise<void> {
    if (this.client) return;
    this.setState({ kind: 'starting' });
    const folder = vscode.workspace.workspaceFolders?.[0];
    const config = vscode.workspace.getConfiguration(SECTION, folder?.uri);

    if (config.get<string>('connect.mode') === 'tcp') {
      const { serverOptions, authToken } = this.tcpServerOptions(config, folder?.uri.fsPath);
      await this.startClient(serverOptions, authToken);
      return;
    }

    this.startedPlan = undefined;
    if (!vscode.workspace.isTrusted) {
      this.log('Restricted Mode: the server command comes from user settings only, and nothing of the workspace is run.');
    }
    let plan: LaunchPlan;
    try {
      plan = await this.settingsPlan();
    } catch (err) {
      if (err instanceof LaunchSettingError) {
        this.fail(err.message);
        void this.offerSettings(err.message, err.setting);
        return;
      }
      throw err;
    }
    await this.watchPythonExtension(plan);
    if (plan.python) {
      const usable = await this.serverFromPython(plan);
      if (!usable) return;
      plan = usable;
    }
    this.startedPlan = plan;
    if (this.mcpEndpoint) plan = withMcpEndpoint(plan);
    this.log(`Server command (${describeSource(plan.source)}): ${[plan.command, ...plan.args].join(' ')}`);
    const command = plan.command;
    const args = plan.args;

    // Spawned here rather than by the client (same command, `--stdio` appended): its pid names
    // this window's server to `mcp --server-pid`. The client calls this again on a restart. It starts in the
    // extension's launch folder, not the workspace (launch.ts launchFolder); the folders go in `initialize`.
    const line = serverSpawn({ ...plan, command, args }, this.launchFolder);
    const serverOptions: ServerOptions = () =>
      new Promise<ChildProcess>((resolve, reject) => {
        const child = spawn(line.command, line.args, { cwd: line.cwd, env: { ...process.env }, windowsHide: true });
        this.serverProcess = child;
        child.on('error', (err) => this.log(`Server process: ${err.message}`));
        child.once('error', reject);
        child.once('spawn', () => resolve(child));
      });
    await this.startClient(serverOptions);
  }

  /**
   * The command line that starts the server for this window: the one the server was started with
   * (which may be the extension's own environment), else what the settings say. Other commands of the
   * same installation (`mcp`, `setup`) are run from it. Throws {@link LaunchSettingError} for an unusable setting.
   */
  async launchPlan(): Promise<LaunchPlan> {
    await this.queue;
    return this.startedPlan ?? (await this.settingsPlan());
  }

  /**
   * What the settings choose (serverCommand, else interpreter, else the Python extension's
   * interpreter, else `python3`). Throws {@link LaunchSettingError} for an unusable setting.
   */
  private async settingsPlan(): Promise<LaunchPlan> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    const config = vscode.workspace.getConfiguration(SECTION, folder?.uri);
    const serverCommand = config.get<unknown>('serverCommand');
    const interpreter = config.get<unknown>('interpreter');
    const needPython =
      !(Array.isArray(serverCommand) && serverCommand.length > 0) &&
      !(typeof interpreter === 'string' && interpreter.trim() !== '');
    return resolveLaunch({
      serverCommand,
      interpreter,
      pythonExtension: needPython && vscode.workspace.isTrusted ? await activePythonInterpreter(folder?.uri, (l) => this.log(l)) : undefined,
      platform: process.platform,
      home: os.homedir(),
      workspaceFolder: folder?.uri.fsPath,
      restricted: !vscode.workspace.isTrusted,
    });
  }

  /**
   * Attach to a server already running with `--tcp` (`contextCompanion.connect.*`): the port and
   * token come from the settings, or from the discovery file whose folders hold this workspace.
   * The token goes in `initializationOptions.authToken`, which the server checks before anything else.
   */
  private tcpServerOptions(
    config: vscode.WorkspaceConfiguration,
    workspace: string | undefined,
  ): { serverOptions: ServerOptions; authToken: string } {
    let port = config.get<number>('connect.port') ?? 0;
    let token = (config.get<string>('connect.token') ?? '').trim();
    if (port === 0 || token === '') {
      const found = workspace ? findServer(workspace, 'tcp', port) : undefined;
      if (!found) {
        throw new Error(
          'contextCompanion.connect.mode is "tcp" but no running server (context-companion serve --tcp) announces ' +
            'this workspace in its discovery file; set contextCompanion.connect.port and contextCompanion.connect.token.',
        );
      }
      this.log(`Attaching to the server of ${found.file}`);
      port = found.port;
      if (token === '') token = found.token ?? '';
    }
    const serverOptions: ServerOptions = () =>
      new Promise((resolve, reject) => {
        const socket = net.connect({ host: '127.0.0.1', port });
        socket.once('connect', () => resolve({ reader: socket, writer: socket }));
        socket.once('error', reject);
      });
    return { serverOptions, authToken: token };
  }

  private async startClient(serverOptions: ServerOptions, authToken?: string): Promise<void> {
    const initializationOptions: Record<string, unknown> = this.serverSettings();
    if (authToken !== undefined) initializationOptions.authToken = authToken;
    // Beside the settings: what this client can do beyond LSP (Gemini CLI diffs, memory change notices),
    // and that it asks for the listening ports when they are used (listeners.ts).
    initializationOptions.capabilities = { showDiff: true, memoryChanged: true, listenOnRequest: true };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }],
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions,
      errorHandler: this.errorHandler(),
      synchronize: { configurationSection: SECTION },
      middleware: {
        workspace: {
          // Answer workspace/configuration for our section with explicit, server-only settings.
          configuration: async (params, token, next) => {
            const own = params.items.map((item) => isOwnSection(item.section));
            const others = params.items.filter((_, i) => !own[i]);
            const answered = others.length > 0 ? await next({ items: others }, token) : [];
            if (answered instanceof Error) return answered;
            const rest = [...(answered as unknown[])];
            return params.items.map((item, i) => {
              if (!own[i]) return rest.shift();
              const scope = item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined;
              return sectionValue(this.serverSettings(scope), item.section);
            });
          },
          // Push the same filtered settings instead of the raw section.
          didChangeConfiguration: async (sections, next) => {
            if (!sections || !sections.includes(SECTION) || !this.client) {
              return next(sections);
            }
            await this.client.sendNotification(DidChangeConfigurationNotification.type, {
              settings: { [SECTION]: this.serverSettings() },
            });
          },
        },
      },
    };

    const client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
    client.onNotification(INSTRUCTION_CHANGED_NOTIFICATION, (params: InstructionChangedParams) => {
      this.instructionEmitter.fire(params);
    });
    for (const hook of this.clientHooks) hook(client);
    client.onDidChangeState((e) => {
      if (this.client === client && e.newState === State.Running && this.current.kind !== 'running') {
        this.recovering = false;
        this.log('Server running.');
        this.setState({ kind: 'running' });
      }
    });
    this.client = client;
    try {
      await client.start();
    } catch (err) {
      this.client = undefined;
      await client.dispose().catch(() => undefined);
      this.endServerProcess();
      const why = err instanceof Error ? err.message : String(err);
      this.fail(`The server did not start: ${why}`);
      void this.offerOutput(`The server did not start: ${why}`);
      return;
    }
    if (this.current.kind !== 'running') {
      this.log('Server running.');
      this.setState({ kind: 'running' });
    }
  }

  /**
   * Restart a server that crashed after it had started, at most MAX_RESTARTS times in
   * RESTART_WINDOW_MS; never restart one that fails while starting (that would loop).
   */
  private errorHandler(): ErrorHandler {
    const crashes: number[] = [];
    return {
      error: (_error, _message, count) => ({
        action: count !== undefined && count > 3 ? ErrorAction.Shutdown : ErrorAction.Continue,
        handled: true,
      }),
      closed: () => {
        if (this.current.kind !== 'running' && !this.recovering) {
          return { action: CloseAction.DoNotRestart, handled: true };
        }
        const now = Date.now();
        crashes.push(now);
        while (crashes.length > 0 && now - crashes[0] > RESTART_WINDOW_MS) crashes.shift();
        if (crashes.length <= MAX_RESTARTS) {
          this.log('The server stopped unexpectedly; starting it again.');
          this.recovering = true;
          this.setState({ kind: 'starting' });
          return { action: CloseAction.Restart, handled: true };
        }
        this.recovering = false;
        this.fail(
          `The server stopped ${crashes.length} times in a few minutes and is left stopped. ` +
            'See the "Context Companion" output, then run "Context Companion: Restart Server".',
        );
        void this.offerOutput(this.current.kind === 'error' ? this.current.message : 'The server stopped.');
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    };
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.recovering = false;
    if (client) {
      try {
        if (client.needsStop()) await client.stop(STOP_TIMEOUT_MS);
      } catch (err) {
        this.log(`Stopping the server: ${err instanceof Error ? err.message : String(err)}`);
      }
      await client.dispose().catch(() => undefined);
    }
    this.endServerProcess();
    if ((this.current.kind !== 'error' && this.current.kind !== 'notInstalled') || client) this.setState({ kind: 'stopped' });
  }

  /** A server that has not exited 3 s after stop/exit is killed (the client does this only for processes it spawned). */
  private endServerProcess(): void {
    const child = this.serverProcess;
    this.serverProcess = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const timer = setTimeout(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill();
    }, STOP_TIMEOUT_MS);
    child.once('exit', () => clearTimeout(timer));
  }

  /**
   * The plan to start when the server runs from Python: `plan` when its interpreter imports the
   * package; else, for an interpreter the extension found (not one the user set: that is never
   * touched), the bundled server in the extension's own environment, installed when needed.
   * Undefined when there is nothing to start yet (the user was told why).
   */
  private async serverFromPython(plan: LaunchPlan): Promise<LaunchPlan | undefined> {
    const result = await runProbe(plan.python ?? [plan.command], this.launchFolder);
    const wheel = this.bundledWheel();
    const outcome = classifyProbe(result, plan, process.platform, wheel?.path);
    if (outcome.kind === 'ok') return plan;
    if (plan.source === 'interpreter') {
      this.reportProbe(outcome, result);
      return undefined;
    }
    this.log(`No server in the Python found: ${outcome.message}`);
    const folder = vscode.workspace.workspaceFolders?.[0];
    const autoInstall = vscode.workspace.getConfiguration(SECTION, folder?.uri).get<unknown>('server.autoInstall') === true;
    const decision = decideServer({
      wheel,
      ready: wheel ? readyEnv(this.installRoot, wheel, process.platform) : undefined,
      others: wheel ? otherEnvs(this.installRoot, wheel) : [],
      autoInstall,
      approved: this.installApproved,
    });
    this.installApproved = false;
    switch (decision.kind) {
      case 'usePrivate':
        return bundledPlan(decision.python);
      case 'noWheel':
        this.reportProbe(outcome, result);
        return undefined;
      case 'ask': {
        const version = wheel?.version ?? '';
        // The offer only where it can succeed: without a Python 3.10+ (or uv) it would fail after the click.
        const prerequisite = await installPrerequisite(runProcess, plan.python, process.platform, this.launchFolder);
        if (!prerequisite.ok) {
          this.log(prerequisite.message);
          this.setState({ kind: 'notInstalled', message: prerequisite.message, pythonMissing: true });
          void this.offerPython(prerequisite.message, prerequisite.command);
          return undefined;
        }
        const message =
          `No server is installed (${plan.python?.join(' ')} cannot import context_companion). ` +
          `Choose Install to put the server ${version} that comes with the extension into its own environment.`;
        this.log(message);
        this.setState({ kind: 'notInstalled', message, pythonMissing: false });
        void this.offerInstall(version);
        return undefined;
      }
      case 'install': {
        const installed = await this.install(wheel!, plan, decision.reason);
        return installed ? bundledPlan(installed) : undefined;
      }
    }
  }

  /** The wheel the `.vsix` carries (undefined in a development build without one). */
  private bundledWheel(): BundledWheel | undefined {
    if (this.wheel === null) {
      try {
        this.wheel = findBundledWheel(this.extensionPath, this.extensionVersion);
      } catch (err) {
        this.log(`Cannot read the bundled server wheel: ${err instanceof Error ? err.message : String(err)}`);
        this.wheel = undefined;
      }
    }
    return this.wheel;
  }

  /** One click: install the bundled server, then start it. */
  private async offerInstall(version: string): Promise<void> {
    const install = 'Install';
    const choice = await vscode.window.showInformationMessage(
      `${CLIENT_NAME}: no server found. Install the server ${version} that comes with the extension into its own ` +
        'environment (its dependencies come from your package index)?',
      install,
      'Open Settings',
    );
    if (choice === install) {
      this.installApproved = true;
      await this.restart();
    } else if (choice === 'Open Settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'contextCompanion.server.autoInstall');
    }
  }

  /** No Python 3.10+ to install the server with: what is missing, and the command that gets it. */
  private async offerPython(message: string, command: string): Promise<void> {
    const choice = await vscode.window.showWarningMessage(`${CLIENT_NAME}: ${message}`, 'Copy Command', 'Open Settings');
    if (choice === 'Copy Command') {
      await vscode.env.clipboard.writeText(command);
      void vscode.window.showInformationMessage(
        'Context Companion: the command is on the clipboard. Run it in a terminal, then run "Context Companion: Restart Server".',
      );
    } else if (choice === 'Open Settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'contextCompanion.interpreter');
    }
  }

  /** Install the bundled wheel with a progress notification; the environment's Python, or undefined. */
  private async install(wheel: BundledWheel, found: LaunchPlan, reason: 'autoInstall' | 'approved' | 'upgrade'): Promise<string | undefined> {
    const title =
      reason === 'upgrade' ? `${CLIENT_NAME}: upgrading the server to ${wheel.version}` : `${CLIENT_NAME}: installing the server ${wheel.version}`;
    this.log(`${title} (${reason}).`);
    const started = Date.now();
    const result: InstallResult = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable: false },
      (progress) =>
        installBundledServer(
          { run: runProcess, log: (line) => this.log(line), report: (message) => progress.report({ message }) },
          { root: this.installRoot, wheel, foundPython: found.python, platform: process.platform },
        ),
    );
    if (result.kind === 'installed') {
      this.log(`The server ${wheel.version} is ready (${((Date.now() - started) / 1000).toFixed(1)} s, ${result.installer}).`);
      return result.python;
    }
    this.fail(result.message);
    void this.offerInstallFailure(result.message, result.command);
    return undefined;
  }

  private async offerInstallFailure(message: string, command: string | undefined): Promise<void> {
    const buttons = ['Retry', ...(command ? ['Copy Command'] : []), 'Show Output'];
    const choice = await vscode.window.showErrorMessage(`${CLIENT_NAME}: ${message}`, ...buttons);
    if (choice === 'Retry') {
      this.installApproved = true;
      await this.restart();
    } else if (choice === 'Copy Command' && command) {
      await vscode.env.clipboard.writeText(command);
      void vscode.window.showInformationMessage(
        'Context Companion: the command is on the clipboard. Run it in a terminal, then run "Context Companion: Restart Server".',
      );
    } else if (choice === 'Show Output') {
      this.output.show(true);
    }
  }

  /** Tell the user why the interpreter cannot run the server, and how to fix it. */
  private reportProbe(outcome: Exclude<ProbeOutcome, { kind: 'ok' }>, result: ProbeResult): void {
    this.fail(outcome.message);
    if (result.stderr.trim()) this.output.appendLine(result.stderr.trimEnd());
    if (outcome.kind === 'missingPackage') {
      void vscode.window
        .showErrorMessage(`${CLIENT_NAME}: ${outcome.message}`, 'Copy Command', 'Open Settings')
        .then(async (choice) => {
          if (choice === 'Copy Command') {
            await vscode.env.clipboard.writeText(outcome.installCommand);
            void vscode.window.showInformationMessage(
              'Context Companion: the install command is on the clipboard. Run it in a terminal, then run "Context Companion: Restart Server".',
            );
          } else if (choice === 'Open Settings') {
            await vscode.commands.executeCommand('workbench.action.openSettings', 'contextCompanion.interpreter');
          }
        });
    } else {
      void this.offerSettings(outcome.message, 'contextCompanion.interpreter');
    }
  }

  private async watchPythonExtension(plan: LaunchPlan): Promise<void> {
    this.pythonWatch?.dispose();
    this.pythonWatch = undefined;
    if (plan.source !== 'pythonExtension') return;
    this.pythonWatch = await onPythonInterpreterChanged(() => {
      this.log('The Python extension changed its interpreter: restarting the server.');
      void this.restart();
    });
  }

  private async offerSettings(message: string, setting: string): Promise<void> {
    const choice = await vscode.window.showErrorMessage(`${CLIENT_NAME}: ${message}`, 'Open Settings', 'Show Output');
    if (choice === 'Open Settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', setting);
    } else if (choice === 'Show Output') {
      this.output.show(true);
    }
  }

  private async offerOutput(message: string): Promise<void> {
    const choice = await vscode.window.showErrorMessage(`${CLIENT_NAME}: ${message}`, 'Show Output');
    if (choice === 'Show Output') this.output.show(true);
  }
}
