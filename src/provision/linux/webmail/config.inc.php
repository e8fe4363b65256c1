<?php
// Managed by Berth's webmail component (docs/linux-driver.md, Webmail): rewritten whenever Berth
// starts. Root's, readable by webmail's own user alone: it holds the DES key.
$config = [];
$config['db_dsnw'] = 'sqlite:///{{database}}?mode=0600';
// A mailbox logs in with its whole address and its own password, to the local Dovecot.
$config['imap_host'] = '{{imap_host}}:{{imap_port}}';
$config['username_domain'] = '';
$config['login_lc'] = 2;
$config['auto_create_user'] = true;
// Sent through submission with the mailbox's own login, so that the sender checks and DKIM signing
// apply as for any client. Over the loopback, to this server's own Postfix: its certificate names
// the server, not the loopback address, so the name is not checked.
$config['smtp_host'] = 'tls://{{smtp_host}}:{{submission_port}}';
$config['smtp_user'] = '%u';
$config['smtp_pass'] = '%p';
$config['smtp_conn_options'] = ['ssl' => ['verify_peer' => false, 'verify_peer_name' => false]];
$config['des_key'] = '{{des_key}}';
$config['plugins'] = [];
$config['skin'] = 'elastic';
$config['product_name'] = 'Webmail';
$config['support_url'] = '';
$config['enable_installer'] = false;
$config['enable_spellcheck'] = false;
$config['temp_dir'] = '{{data_dir}}/temp/';
$config['log_dir'] = '{{data_dir}}/logs/';
// Sessions: only over HTTPS, never to scripts, never sent by another site's page; bound to the
// address that logged in.
$config['use_https'] = true;
$config['session_samesite'] = 'Strict';
$config['ip_check'] = true;
$config['session_lifetime'] = 30;
$config['login_autocomplete'] = 0;
// At most 3 failed logins of an address a minute: the right password is refused too after them.
$config['login_rate_limit'] = 3;
$config['x_frame_options'] = 'deny';
