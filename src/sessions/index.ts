export { findExecutable, type LocalPtyRequest, openLocalPty } from "./local-pty.js";
export { openRecording, type Recording, type RecordingRequest, recordingPath } from "./recording.js";
export { createSessionRegistry, type SessionRegistryDeps } from "./registry.js";
export { type BlockPool, createBlockPool, RingBuffer } from "./ring-buffer.js";
export { resolveSignalName } from "./signals.js";
export { clampTerminalSize, MAX_TERMINAL_SIDE } from "./terminal-size.js";
export type {
  AddedSession,
  AddSessionRequest,
  DescendantReaper,
  DescendantTracker,
  KillResult,
  Reaped,
  ReapReason,
  RecvRequest,
  RecvResult,
  SessionInfo,
  SessionKind,
  SessionRegistry,
  SessionRegistryConfig,
  SessionTransport,
  TransportEvents,
} from "./types.js";
export { Utf8StreamDecoder } from "./utf8-stream.js";
