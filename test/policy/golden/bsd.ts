import type { Tier } from "../../../src/core/index.js";
import type { Basis } from "../../../src/policy/index.js";
import type { GoldenRow } from "./index.js";

/**
 * BSD and macOS administration (src/policy/rules/bsd.ts and the programs of
 * src/policy/readonly/programs-bsd.ts): for each program, the forms proven to
 * only read, the look-alikes that must not be proven (acting forms, options
 * that write or point at another configuration, bare forms that read stdin,
 * dynamic words, redirections), and the acting forms with their tier and basis.
 */

/** Rows at this tier and basis, one for each non-blank line of the block (a command). */
const rows =
  (tier: Tier, basis: Basis) =>
  (block: string): GoldenRow[] =>
    block
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l !== "")
      .map((text) => ({ text, tier, basis }));
const read = rows(0, "proven_read");
const unproven = rows(1, "default");
const t2AccountChange = rows(2, "account_change");
const t2ConfigChange = rows(2, "config_change");
const t2FilesystemChange = rows(2, "filesystem_change");
const t2FirewallChange = rows(2, "firewall_change");
const t2HostChange = rows(2, "host_change");
const t2PackageChange = rows(2, "package_change");
const t2PowerKernel = rows(2, "power_kernel");
const t2PrivilegeEscalation = rows(2, "privilege_escalation");
const t2ServiceChange = rows(2, "service_change");
const t3AccountAccess = rows(3, "account_access");
const t3FileDestruction = rows(3, "file_destruction");
const t3NetworkLockout = rows(3, "network_lockout");
const t3PowerKernel = rows(3, "power_kernel");
const t3StorageDestruction = rows(3, "storage_destruction");

export const BSD_ROWS: readonly GoldenRow[] = [
  // macOS: launchd, pf, disks, defaults, settings, the directory service, Time Machine
  ...read(`
    launchctl list
    launchctl list com.apple.sshd
    launchctl print system/com.openssh.sshd
    launchctl print-disabled system
    launchctl blame system/com.example.agent
    launchctl procinfo 412
    launchctl dumpstate
    launchctl hostinfo
    launchctl managerpid
    launchctl version
    launchctl limit maxfiles
    launchctl help
    pfctl -sr
    pfctl -s rules
    pfctl -vvsr
    pfctl -s info
    pfctl -sa
    pfctl -s Tables
    pfctl -t bruteforce -T show
    pfctl -t bruteforce -T test 203.0.113.9
    pfctl -a '*' -sr
    pfctl -sr 2>/dev/null | grep block
    pfctl -h
    diskutil list
    diskutil list -plist external physical
    diskutil info disk0s2
    diskutil listFilesystems
    diskutil apfs list
    diskutil apfs listSnapshots /
    diskutil apfs listCryptoUsers disk1s1
    diskutil verifyVolume /
    defaults read
    defaults read com.apple.finder AppleShowAllFiles
    defaults -currentHost read -g
    defaults read-type com.apple.dock autohide
    defaults find sleep
    defaults export com.apple.dock -
    scutil --get ComputerName
    scutil --dns
    scutil --nwi
    scutil -r example.com
    systemsetup -getremotelogin
    systemsetup -gettimezone
    systemsetup -listtimezones
    pmset -g
    pmset -g batt
    networksetup -listallnetworkservices
    networksetup -getinfo Wi-Fi
    csrutil status
    csrutil authenticated-root status
    spctl --status
    spctl --assess -vv /Applications/Foo.app
    spctl -a -t exec -vv /Applications/Foo.app
    fdesetup status
    fdesetup list -extended
    system_profiler -json SPHardwareDataType
    ioreg -l -w0
    kextstat -l
    kmutil showloaded --list-only
    log show --last 1h --predicate 'process == "sshd"'
    log stream --level debug
    softwareupdate -l
    softwareupdate --list --no-scan
    softwareupdate --history
    dscl . -read /Users/bob
    dscl . -list /Users UniqueID
    dscl . read /Users/bob
    dscl /Search -search /Users RealName Bob
    sw_vers
    dseditgroup -o read admin
    dseditgroup -o checkmember -m bob admin
    profiles show
    profiles status -type enrollment
    tmutil listbackups
    tmutil status
    tmutil listlocalsnapshots /
  `),
  ...unproven(`
    launchctl
    echo 'remove com.example.agent' | launchctl
    pfctl
    pfctl -s
    pfctl -z -s info
    pfctl -t bruteforce -T zero
    pfctl -sr -S /tmp/states
    pfctl -s $WHAT
    diskutil apfs
    diskutil $VERB disk2
    diskutil list > /tmp/disks
    defaults export com.apple.dock /tmp/dock.plist
    defaults $VERB com.apple.dock
    scutil
    echo 'show State:/Network/Global/IPv4' | scutil
    pmset displaysleepnow
    log config --status
    log collect --output /tmp/x.logarchive
    softwareupdate -d -a
    softwareupdate --schedule
    dscl
    dscl .
    dscl -f /tmp/node localonly -read /Local/Target/Users/bob
    profiles -P
    tmutil startbackup
  `),
  ...t2ServiceChange(`
    launchctl load -w /Library/LaunchDaemons/com.example.agent.plist
    launchctl bootout gui/501/com.example.agent
    launchctl disable system/com.example.agent
    launchctl kickstart -k system/com.example.agent
    launchctl kill SIGTERM system/com.example.agent
    launchctl stop com.example.agent
    launchctl remove com.example.agent
    launchctl submit -l job -- /usr/local/bin/job
    launchctl setenv PATH /opt/bin
    launchctl config user path /usr/local/bin
    launchctl $VERB
    launchctl examine
  `),
  ...t3NetworkLockout(`
    launchctl bootout system/com.openssh.sshd
    launchctl unload -w /System/Library/LaunchDaemons/ssh.plist
    launchctl disable system/com.openssh.sshd
    pfctl -e
    pfctl -ef /etc/pf.conf
    pfctl -F all
    pfctl -Fa -f /etc/pf.conf
    pfctl -F states
    pfctl -t trusted -T flush
    pfctl -t trusted -T kill
    pfctl -t bruteforce -T show -T flush
    pfctl -F all --help
    systemsetup -f -setremotelogin off
    networksetup -setnetworkserviceenabled Ethernet off
    networksetup -switchtolocation Home
    networksetup -setv4off Ethernet
    networksetup -getinfo Wi-Fi -setairportpower en0 off
  `),
  ...t2HostChange(`
    launchctl limit maxfiles 65536 200000
    launchctl umask 027
    scutil --set HostName web1
    scutil --get HostName --set web1
    systemsetup -settimezone UTC
    systemsetup -setremotelogin on
    pmset -a sleep 0
    pmset restoredefaults
    csrutil disable
    spctl --master-disable
    spctl --status --add /x
  `),
  ...t2PrivilegeEscalation(`
    launchctl asuser 501 open /Applications/Safari.app
  `),
  ...t3PowerKernel(`
    launchctl reboot
    launchctl reboot userspace
    pmset sleepnow
    fdesetup authrestart
    kextunload -b com.example.driver
    kmutil unload -b com.x
    softwareupdate -i -a -R
    softwareupdate --install --all --restart
  `),
  ...t2FirewallChange(`
    pfctl -f /etc/pf.conf
    pfctl -d
    pfctl -k 203.0.113.9
    pfctl -t bruteforce -T add 203.0.113.9
    pfctl -t bruteforce -T delete 203.0.113.9
    pfctl -t bruteforce -T replace -f /etc/blocked
    pfctl -x loud
    scutil --renew en0
    networksetup -setdnsservers Wi-Fi 1.1.1.1
    networksetup -createlocation Lab populate
  `),
  ...t2FilesystemChange(`
    diskutil mount disk2s1
    diskutil unmount /Volumes/Backup
    diskutil eject disk2
    diskutil rename disk2s1 Archive
    diskutil repairVolume disk2s1
    diskutil apfs addVolume disk1 APFS Data
    fdesetup enable
    fdesetup changerecovery -personal
    tmutil restore /Volumes/Backup/x /Users/bob/x
  `),
  ...t3StorageDestruction(`
    diskutil eraseDisk JHFS+ Backup disk2
    diskutil reformat disk2s1
    diskutil partitionDisk disk2 GPT JHFS+ Data 100%
    diskutil zeroDisk disk2
    diskutil secureErase 0 disk2
    diskutil apfs deleteContainer disk3
    diskutil apfs deleteVolume disk1s5
    diskutil apfs deleteSnapshot disk1s1 -name com.apple.TimeMachine.x
    diskutil resizeVolume disk0s2 100G
    diskutil appleRAID create mirror Mirror JHFS+ disk2 disk3
    tmutil delete /Volumes/Backup/Backups.backupdb/mac/2024-01-01-000000
    tmutil deletelocalsnapshots 2024-01-01-000000
    tmutil thinlocalsnapshots / 10000000000
  `),
  ...t2ConfigChange(`
    defaults write com.apple.finder AppleShowAllFiles -bool true
    defaults delete com.apple.dock
    defaults import com.apple.dock /tmp/dock.plist
    defaults rename com.apple.dock old new
    scutil --prefs
    log config --mode level:debug --subsystem com.example
    softwareupdate --schedule off
    profiles install -path /tmp/x.mobileconfig
    profiles remove -identifier com.example.vpn
    profiles -I -F /tmp/x.mobileconfig
    tmutil disable
    tmutil setdestination /Volumes/Backup
    tmutil addexclusion /Users/bob/Downloads
  `),
  ...t2PowerKernel(`
    systemsetup -setstartupdisk /System/Library/CoreServices
    pmset repeat wake MTWRF 08:00:00
    kextload /Library/Extensions/x.kext
    kmutil load -p /Library/Extensions/x.kext
    kmutil install --update-all
  `),
  ...t2AccountChange(`
    fdesetup remove -user bob
    dscl . -create /Users/bob UserShell /bin/zsh
    dscl . -append /Groups/admin GroupMembership bob
    dscl . -change /Users/bob UserShell /bin/bash /bin/zsh
    dscl . -delete /Groups/admin GroupMembership bob
    dseditgroup -o edit -a bob -t user admin
    dseditgroup -o create devs
    dseditgroup -o delete devs
    dseditgroup -o read -o edit -a bob -t user admin
  `),
  ...t3FileDestruction(`
    log erase --all
  `),
  ...t2PackageChange(`
    softwareupdate -ia
    softwareupdate --install --all
    softwareupdate --fetch-full-installer
  `),
  ...t3AccountAccess(`
    dscl . -passwd /Users/bob secret
    dscl . -delete /Users/bob
    dscl . -delete /Users/bob --help
  `),
  // FreeBSD and OpenBSD: pkg, updates, boot environments, rc.conf and rc scripts, partitions
  ...read(`
    pkg info
    pkg info -o nginx
    pkg -j web info
    pkg audit
    pkg version -vRL=
    pkg query '%n %v'
    pkg rquery '%n' nginx
    pkg search nginx
    pkg check -s -a
    pkg help install
    freebsd-update IDS
    freebsd-update updatesready
    bectl list
    bectl check
    beadm list
    syspatch -l
    syspatch -c
    sysrc -a
    sysrc sshd_enable
    sysrc -n hostname
    sysrc -c sshd_enable=YES
    service sshd status
    service nginx describe
    service nginx enabled
    service -e
    service -j web nginx status
    rcctl ls started
    rcctl get sshd
    rcctl check httpd
    sockstat -4l
    fstat -p 1
    kldstat -v
    pkg_info -Q vim
    gpart show
    gpart list ada0
    gpart backup ada0
    camcontrol devlist
    camcontrol identify ada0
    camcontrol tags da0 -v
  `),
  ...unproven(`
    pkg audit -F
    pkg audit --fetch
    pkg -C /tmp/pkg.conf info
    pkg -o PLUGINS=evil info
    echo y | pkg info
    pkg check -dn
    pkg check -r
    pkg update
    pkg fetch nginx
    pkg clean -a
    pkg $CMD
    freebsd-update -f /tmp/x.conf IDS
    fw_update -n
    sysrc -f /etc/rc.conf.d/x foo
    sysrc -R /mnt hostname
    sysrc -j web hostname
    sysrc $X
    camcontrol tags da0 -N 32
    camcontrol standby ada0
    camcontrol rescan all
  `),
  ...t2PackageChange(`
    pkg install -y nginx
    pkg add ./nginx.pkg
    pkg upgrade -y
    pkg lock nginx
    pkg set -A 1 nginx
    pkg delete -y nginx
    pkg remove nginx
    pkg autoremove -y
    pkg check -d
    pkg annotate -A nginx k v
    pkg backup -r /tmp/db
    freebsd-update fetch
    freebsd-update rollback
    freebsd-update -r 14.1-RELEASE upgrade
    syspatch
    syspatch -r
    sysupgrade -n
    fw_update
  `),
  ...t3AccountAccess(`
    pkg delete -y sudo
  `),
  ...t3PowerKernel(`
    sysupgrade
    kldunload pf
  `),
  ...t2FilesystemChange(`
    bectl create pre-upgrade
    bectl mount pre-upgrade /mnt
    bectl rename a b
    gpart create -s gpt ada1
    gpart add -t freebsd-zfs ada1
    gpart modify -i 2 -l root ada0
  `),
  ...t2PowerKernel(`
    bectl activate pre-upgrade
    beadm activate pre-upgrade
    kldload zfs
    gpart bootcode -b /boot/pmbr ada0
    gpart set -a bootme -i 2 ada0
  `),
  ...t3StorageDestruction(`
    bectl destroy -o old
    beadm destroy old
    gpart delete -i 2 ada0
    gpart destroy -F ada0
    gpart resize -i 2 -s 20G ada0
    gpart restore -F ada0 < table.txt
    camcontrol format da0
    camcontrol sanitize da0 -a overwrite
    camcontrol security ada0 -U user -s pw -e pw
  `),
  ...t2ConfigChange(`
    sysrc sshd_enable=YES
    sysrc ifconfig_em0=DHCP
    sysrc cloned_interfaces+=lo1
    sysrc -x nginx_enable
  `),
  ...t3NetworkLockout(`
    sysrc sshd_enable=NO
    sysrc -x sshd_enable
    service sshd onestop
    service sshd disable
    service -j web sshd stop
    /etc/rc.d/sshd stop
    service netif stop
    rcctl stop sshd
    rcctl disable sshd
    rcctl set sshd status off
  `),
  ...t2ServiceChange(`
    service -R
    service nginx onestart
    service nginx enable
    service nginx delete
    /usr/local/etc/rc.d/nginx restart
    rcctl enable httpd
    rcctl -f start httpd
    rcctl set httpd flags -v
    rcctl restart httpd
  `),
];
