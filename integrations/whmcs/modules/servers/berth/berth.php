<?php
/**
 * Berth provisioning module for WHMCS.
 *
 * Creates, suspends, unsuspends, terminates and changes Berth hosting accounts from WHMCS, reads
 * their usage for the whole server in one call, lists them for WHMCS's server sync, and logs the
 * client or the administrator into an account's control panel (single sign-on). Every
 * change carries an Idempotency-Key kept until Berth has answered, so a retry after a timeout
 * gets Berth's first answer back instead of acting twice. The server's certificate is always
 * verified: by the system's CA store, or pinned from the server's access hash (its PEM or its
 * SHA-256 fingerprint). Plain PHP 8.1+ with the curl extension; no Composer dependency.
 *
 * See integrations/whmcs/README.md.
 */

if (!defined('WHMCS')) {
    die('This file cannot be accessed directly');
}

use WHMCS\Database\Capsule;

require_once __DIR__ . '/lib/calls.php';

function berth_MetaData()
{
    return [
        'DisplayName' => 'Berth',
        'APIVersion' => '1.1',
        'RequiresServer' => true,
        'DefaultSSLPort' => '5555',
        'DefaultNonSSLPort' => '5555',
        'ListAccountsUniqueIdentifierDisplayName' => 'Domain',
        'ListAccountsUniqueIdentifierField' => 'domain',
        'ListAccountsProductField' => 'configoption1',
    ];
}

function berth_ConfigOptions()
{
    return [
        'Package' => [
            'Type' => 'text',
            'Size' => '32',
            'Default' => 'default',
            'Loader' => 'berth_LoadPackages',
            'SimpleMode' => true,
            'Description' => 'The Berth package the account is created on',
        ],
        'DKIM' => ['Type' => 'yesno', 'Default' => 'on', 'Description' => 'Sign outgoing mail with DKIM'],
        'SPF' => ['Type' => 'yesno', 'Default' => 'on', 'Description' => 'Publish an SPF record'],
        'Shell access' => ['Type' => 'yesno', 'Description' => 'A jailed SSH login (else SFTP only)'],
        'Mail server' => [
            'Type' => 'dropdown',
            'Options' => 'local,remote',
            'Default' => 'local',
            'Description' => 'local: mail is hosted on the server; remote: elsewhere',
        ],
        'Reseller' => ['Type' => 'yesno', 'Description' => 'Make the account a reseller'],
        'Reseller account limit' => [
            'Type' => 'text',
            'Size' => '10',
            'Default' => 'unlimited',
            'Description' => 'Accounts the reseller may create (a number or unlimited)',
        ],
        'Reseller disk quota' => [
            'Type' => 'text',
            'Size' => '10',
            'Default' => 'unlimited',
            'Description' => 'MB shared by the reseller\'s accounts (a number or unlimited)',
        ],
        'Reseller bandwidth' => [
            'Type' => 'text',
            'Size' => '10',
            'Default' => 'unlimited',
            'Description' => 'MB a month shared by the reseller\'s accounts (a number or unlimited)',
        ],
    ];
}

/** The packages of the server, for the Package option's drop-down. */
function berth_LoadPackages(array $params)
{
    $answer = berth_call($params, 'listpackages');
    if (!$answer['ok']) {
        throw new Exception(berth_message($answer));
    }
    $names = array_filter(explode(',', (string) $answer['data']['packages']), 'strlen');
    return array_combine($names, $names);
}

// ---------------------------------------------------------------------------------------------
// Provisioning functions

function berth_CreateAccount(array $params)
{
    $fields = [
        'user' => $params['username'],
        'domain' => $params['domain'],
        'email' => $params['clientsdetails']['email'] ?? '',
        'package' => berth_option($params, 1, 'default'),
        'password' => $params['password'],
        'dkim' => berth_switch($params, 2, 'on'),
        'spf' => berth_switch($params, 3, 'on'),
        'shell' => berth_switch($params, 4, 'off'),
        'mailserver' => berth_option($params, 5, 'local'),
    ];
    if (berth_isReseller($params)) {
        $fields += [
            'reseller' => 'on',
            'reseller_limt' => berth_option($params, 7, 'unlimited'),
            'reseller_quota' => berth_option($params, 8, 'unlimited'),
            'reseller_bandwidth' => berth_option($params, 9, 'unlimited'),
        ];
    }
    $answer = berth_change($params, 'create', 'createacct', $fields);
    if (!$answer['ok'] && ($answer['code'] ?? '') === 'account_exists' && berth_isSameAccount($params)) {
        return 'success'; // made by an earlier attempt whose answer was lost long ago
    }
    return berth_result($answer);
}

function berth_SuspendAccount(array $params)
{
    $fields = ['user' => $params['username']];
    $reason = trim((string) ($params['suspendreason'] ?? ''));
    if ($reason !== '') {
        // Berth keeps at most 1000 characters of a reason.
        $fields['reason'] = preg_replace('/^(.{0,1000}).*$/su', '$1', $reason);
    }
    return berth_result(berth_change($params, 'suspend', 'suspendacct', $fields));
}

function berth_UnsuspendAccount(array $params)
{
    return berth_result(berth_change($params, 'unsuspend', 'unsuspendacct', ['user' => $params['username']]));
}

function berth_TerminateAccount(array $params)
{
    $answer = berth_change($params, 'terminate', 'removeacct', ['user' => $params['username']]);
    if (!$answer['ok'] && ($answer['code'] ?? '') === 'account_not_found') {
        return 'success'; // removed already, by an earlier attempt or on the server
    }
    return berth_result($answer);
}

function berth_ChangePassword(array $params)
{
    $fields = ['user' => $params['username'], 'password' => $params['password']];
    return berth_result(berth_change($params, 'password', 'passwd', $fields));
}

function berth_ChangePackage(array $params)
{
    $fields = ['user' => $params['username'], 'package' => berth_option($params, 1, 'default')];
    $answer = berth_change($params, 'package', 'changepackage', $fields);
    if (!$answer['ok'] || !berth_isReseller($params)) {
        return berth_result($answer);
    }
    $limits = [
        'user' => $params['username'],
        'reseller_limt' => berth_option($params, 7, 'unlimited'),
        'reseller_quota' => berth_option($params, 8, 'unlimited'),
        'reseller_bandwidth' => berth_option($params, 9, 'unlimited'),
    ];
    return berth_result(berth_change($params, 'reseller-limits', 'setupreseller', $limits));
}

function berth_TestConnection(array $params)
{
    $answer = berth_call($params, 'test_connection');
    return $answer['ok'] ? ['success' => true, 'error' => ''] : ['success' => false, 'error' => berth_message($answer)];
}

/** Usage of every account on the server, from one usagestatistics call. */
function berth_UsageUpdate(array $params)
{
    $answer = berth_call($params, 'usagestatistics');
    if (!$answer['ok']) {
        return berth_message($answer);
    }
    foreach ($answer['data']['accounts'] as $account) {
        Capsule::table('tblhosting')
            ->where('server', $params['serverid'])
            ->where('domain', $account['domain'])
            ->update([
                'diskusage' => (int) $account['quota_usage'],
                'disklimit' => berth_limitNumber($account['quota'] ?? 'unlimited'),
                'bwusage' => (int) $account['bandwidth_usage'],
                'bwlimit' => berth_limitNumber($account['bandwidth'] ?? 'unlimited'),
                'lastupdate' => date('Y-m-d H:i:s'),
            ]);
    }
    return 'success';
}

/** Every account on the server, for WHMCS's server sync and import. */
function berth_ListAccounts(array $params)
{
    $answer = berth_call($params, 'listaccts');
    if (!$answer['ok']) {
        return ['success' => false, 'error' => berth_message($answer)];
    }
    $accounts = [];
    foreach ($answer['data']['accounts'] as $user => $account) {
        $accounts[] = [
            'email' => $account['contactemail'] ?? '',
            'username' => $user,
            'domain' => $account['domain'],
            'uniqueIdentifier' => $account['domain'],
            'product' => $account['package'] ?? '',
            'primaryip' => $account['dedicatedip']['ipv4'] ?? '',
            'created' => ($account['setuptime'] ?? '') === '' ? '' : $account['setuptime'] . ':00',
            'status' => ($account['is_suspended'] ?? 'no') === 'yes' ? 'Suspended' : 'Active',
        ];
    }
    return ['success' => true, 'accounts' => $accounts];
}

/** What the administrator sees on the service's page: state, usage, suspension, server. */
function berth_AdminServicesTabFields(array $params)
{
    $answer = berth_call($params, 'accountsummary', ['user' => $params['username']]);
    if (!$answer['ok']) {
        return ['Berth' => htmlspecialchars(berth_message($answer), ENT_QUOTES)];
    }
    $acct = $answer['data']['acct'];
    $fields = [
        'Berth state' => 'Active',
        'Disk used' => sprintf('%d MB of %s', $acct['quota_usage'] ?? 0, berth_limitText($acct['quota'] ?? 'unlimited')),
        'Bandwidth used' => sprintf('%d MB of %s', $acct['bandwidth_usage'] ?? 0, berth_limitText($acct['bandwidth'] ?? 'unlimited')),
        'Berth package' => $acct['package'] ?? '',
        'Berth server' => $acct['server'] ?? ($params['serverhostname'] ?: $params['serverip']),
    ];
    if (($acct['is_suspended'] ?? 'no') === 'yes') {
        $suspended = berth_call($params, 'listsuspended');
        $entry = $suspended['ok'] ? ($suspended['data']['accounts'][$params['username']] ?? []) : [];
        $fields['Berth state'] = 'Suspended since ' . ($entry['suspendtime'] ?? '?');
        $fields['Suspension reason'] = $entry['reason'] ?? '';
    }
    return array_map(fn ($value) => htmlspecialchars((string) $value, ENT_QUOTES), $fields);
}

function berth_AdminCustomButtonArray()
{
    return ['Refresh usage' => 'RefreshUsage'];
}

/** The Refresh usage button: the server's usage into WHMCS now, rather than at the next cron. */
function berth_RefreshUsage(array $params)
{
    return berth_UsageUpdate($params);
}

// ---------------------------------------------------------------------------------------------
// Single sign-on: "Log in to control panel"

/** The pages of Berth's control panel a single sign-on may open, with the client area's labels. */
const BERTH_PANEL_PAGES = [
    'home' => 'Home',
    'domains' => 'Domains',
    'email' => 'Email',
    'databases' => 'Databases',
    'ftp' => 'FTP',
    'cron' => 'Cron jobs',
    'backups' => 'Backups',
    'security' => 'Security',
];

/**
 * The client area's and the admin area's "Log in to control panel": a create_user_session URL that
 * logs the browser into the account's panel once, within two minutes. A link may ask for a page
 * with `app` (…&dosinglesignon=1&app=email), as cPanel's module does; any other value opens home.
 * No Idempotency-Key: each press makes a fresh URL, and an unused one expires on its own.
 */
function berth_ServiceSingleSignOn(array $params)
{
    $fields = ['user' => $params['username']];
    $page = (string) ($_REQUEST['app'] ?? '');
    if (array_key_exists($page, BERTH_PANEL_PAGES)) {
        $fields['page'] = $page;
    }
    $answer = berth_call($params, 'create_user_session', $fields);
    $url = $answer['ok'] ? (string) ($answer['data']['url'] ?? '') : '';
    if (!str_starts_with($url, 'https://')) {
        return ['success' => false, 'errorMsg' => $answer['ok'] ? 'Berth answered no single sign-on URL' : berth_message($answer)];
    }
    return ['success' => true, 'redirectTo' => $url];
}

/** The service's overview in the client area: a panel with the control panel's buttons. */
function berth_ClientArea(array $params)
{
    return [
        'tabOverviewModuleOutputTemplate' => 'templates/clientarea.tpl',
        'templateVariables' => [
            'berthActive' => ($params['status'] ?? 'Active') === 'Active',
            'berthPages' => array_slice(BERTH_PANEL_PAGES, 1, null, true),
        ],
    ];
}

// ---------------------------------------------------------------------------------------------
// Small helpers

function berth_result(array $answer)
{
    return $answer['ok'] ? 'success' : berth_message($answer);
}

/** A message a billing clerk can act on: Berth's own sentence and its error code. */
function berth_message(array $answer): string
{
    $info = $answer['info'] !== '' ? $answer['info'] : 'Berth answered HTTP ' . $answer['status'];
    return $answer['code'] ? sprintf('%s (%s)', $info, $answer['code']) : $info;
}

function berth_option(array $params, int $n, string $default): string
{
    $value = trim((string) ($params['configoption' . $n] ?? ''));
    return $value === '' ? $default : $value;
}

function berth_switch(array $params, int $n, string $default): string
{
    $value = strtolower(trim((string) ($params['configoption' . $n] ?? '')));
    if ($value === '') {
        return $default;
    }
    return in_array($value, ['on', 'yes', '1', 'true'], true) ? 'on' : 'off';
}

function berth_isReseller(array $params): bool
{
    return ($params['producttype'] ?? '') === 'reselleraccount' || berth_switch($params, 6, 'off') === 'on';
}

/**
 * The reseller the calls act as: none for the server's administrator credentials, and none
 * needed for an API account bound to a reseller (Berth acts as its reseller). A server whose
 * username is written `apiuser/reseller` acts as that reseller with X-RESELLER.
 */
function berth_resellerHeader(array $params): string
{
    $user = (string) $params['serverusername'];
    return str_contains($user, '/') ? substr($user, strpos($user, '/') + 1) : '';
}

/** Whether the account that exists already is this service's: same user and domain. */
function berth_isSameAccount(array $params): bool
{
    $answer = berth_call($params, 'accountsummary', ['user' => $params['username']]);
    return $answer['ok'] && ($answer['data']['acct']['domain'] ?? '') === strtolower(rtrim($params['domain'], '.'));
}

function berth_limitNumber(string $limit): int
{
    return strtolower($limit) === 'unlimited' ? 0 : (int) $limit;
}

function berth_limitText(string $limit): string
{
    return strtolower($limit) === 'unlimited' ? 'unlimited' : $limit . ' MB';
}
