import type { Settings } from "../../config/index.js";
import type { PolicyConfig } from "../modes/decide.js";
import type { EffectivePolicy, HostRef, PolicyBook } from "./types.js";

type PolicySettings = Pick<
  Settings,
  "policyMode" | "policyDeny" | "policyAllow" | "consent" | "consentLeaseMode" | "confirmTier3"
>;

/** The default policy as the settings alone define it: what every relay without a policy file runs. */
export function settingsPolicy(settings: PolicySettings): EffectivePolicy {
  return {
    name: "default",
    source: "settings",
    mode: settings.policyMode,
    deny: settings.policyDeny ? [{ regex: settings.policyDeny, label: "RELAY_SHELL_POLICY_DENY" }] : [],
    allow: settings.policyAllow ? [{ regex: settings.policyAllow, label: "RELAY_SHELL_POLICY_ALLOW" }] : [],
    consent: settings.consent,
    consentLeaseMode: settings.consentLeaseMode,
    confirmTier3: settings.confirmTier3,
    maxTier: 3,
  };
}

/** A book with one policy for every call: the settings' default. */
export function settingsPolicyBook(settings: PolicySettings): PolicyBook {
  const only = settingsPolicy(settings);
  return { default: only, forHost: (_host: HostRef) => only, all: () => [only] };
}

/** True for the settings' own default: its refusals keep the contract's words. */
function isSettingsDefault(policy: EffectivePolicy): boolean {
  return policy.name === "default" && policy.source === "settings";
}

/** What the decision needs of a policy. */
export function policyConfigOf(policy: EffectivePolicy, maxProbe: number): PolicyConfig {
  return {
    mode: policy.mode,
    deny: policy.deny,
    allow: policy.allow,
    maxTier: policy.maxTier,
    name: isSettingsDefault(policy) ? null : policy.name,
    maxProbe,
  };
}
