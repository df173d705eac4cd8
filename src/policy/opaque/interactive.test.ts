import { beforeAll, describe, expect, it } from "vitest";
import { type Classifier, createClassifier } from "../index.js";

/**
 * A command started on a terminal (shell_spawn, ssh_spawn) is judged by the
 * classifier with the `terminal` option: a program whose later input runs
 * commands is at least Tier 2 (`interactive_program`), found on the
 * classifier's own parse, through its wrappers and carriers (ADR 0034).
 */
let classifier: Classifier;

beforeAll(async () => {
  classifier = await createClassifier();
});

const onTerminal = (command: string) => classifier.classify(command, { terminal: true });

const interactive = [
  "",
  "bash",
  "/bin/bash",
  "bash -l",
  "bash -i",
  "bash --login",
  "sh",
  "zsh",
  "dash",
  "fish",
  "ksh",
  "bash -s",
  "bash -c 'exec bash'",
  "bash -lc 'cd /srv; zsh'",
  "python",
  "python3",
  "python3.12",
  "python3 -i script.py",
  "python3 -m asyncio",
  "ipython",
  "node",
  "node -i",
  "irb",
  "perl -de0",
  "php -a",
  "lua",
  "R",
  "ghci",
  "ghc --interactive",
  "psql",
  "psql -h db -U app appdb",
  "mysql -u root -p mydb",
  "sqlite3 app.db",
  "sqlite3 -cmd '.tables' app.db",
  "redis-cli",
  "redis-cli -h cache -p 6380",
  "mongosh",
  "mongo",
  "gdb ./a.out",
  "gdb -ex run ./a.out",
  "sudo -i",
  "sudo -s",
  "sudo bash",
  "sudo -u postgres psql",
  "su",
  "su - root",
  "env TERM=dumb bash",
  "FOO=1 bash",
  "timeout 600 python3",
  "nice -n 5 bash",
  "exec bash",
  "ssh web1",
  "ssh -p 2222 web1 bash",
  "chroot /srv/jail",
  "script -q /dev/null",
  "tmux",
  "docker exec -it app sh",
  "kubectl exec -ti pod -- bash",
  "vim notes.txt",
  "less /var/log/syslog",
  "ls; bash",
  "cd /srv && bash",
  "echo $(bash)",
  'echo "$(python3)"',
  "b\\ash",
  "'bash'",
  "$'\\x62ash'",
  "busybox sh",
  "machinectl shell",
];

const oneShot = [
  "ls /",
  "top",
  "htop",
  "tail -f /var/log/syslog",
  "bash -c 'ls /'",
  "bash script.sh",
  "sh -lc 'echo hi'",
  "python3 -c 'print(1)'",
  "python3 script.py",
  "python3 -m http.server",
  "node -e 'console.log(1)'",
  "node server.js",
  "perl -e 'print 1'",
  "php -r 'echo 1;'",
  "psql -c 'select 1'",
  "psql --command='select 1' app",
  "psql -f init.sql",
  "mysql -e 'select 1'",
  "sqlite3 app.db 'select 1'",
  "redis-cli ping",
  "redis-cli -h cache get key",
  "mongosh --eval 'db.stats()'",
  "gdb -batch -ex bt ./a.out core",
  "sudo -u root ls",
  "sudo -v",
  "su -c 'ls /' root",
  "env",
  "command -v bash",
  "timeout 5 ls",
  "ssh web1 uptime",
  "docker ps",
  "kubectl get pods",
  "kubectl exec pod -- ls",
  "echo bash",
  "ls # bash",
];

describe("a command started on a terminal", () => {
  it.each(interactive)("%s starts a program whose later input runs commands", (command) => {
    expect(onTerminal(command).tier).toBeGreaterThanOrEqual(2);
    const basis = onTerminal(command).basis;
    // The start is interactive; a higher verdict (privilege, a dynamic name) may name another basis.
    if (onTerminal(command).tier === 2 && !/^(?:sudo|su|doas)\b/.test(command.trim()))
      expect(basis).toBe("interactive_program");
  });

  it.each(oneShot)("%s does not", (command) => {
    expect(onTerminal(command).basis).not.toBe("interactive_program");
  });

  it("names the simple command that starts it", () => {
    expect(onTerminal("cd /srv && sudo -u app psql appdb").part).toBe("sudo -u app psql appdb");
    expect(onTerminal("").part).toBe("a shell (no command given)");
  });

  it("does not apply to commands that are not started on a terminal", () => {
    expect(classifier.classify("psql").basis).not.toBe("interactive_program");
    expect(classifier.classify("").tier).toBe(0);
  });

  it("is linear on deep or long input and never throws", () => {
    expect(() => onTerminal("$(".repeat(10_000))).not.toThrow();
    expect(() => onTerminal("'".repeat(100_001))).not.toThrow();
    expect(onTerminal("a ".repeat(200_000)).basis).not.toBe("interactive_program");
  });
});
