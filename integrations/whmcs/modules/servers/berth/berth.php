<?php
/**
 * Berth provisioning module for WHMCS.
 *
 * Creates, suspends, unsuspends, terminates and changes Berth hosting accounts from WHMCS, reads
 * their usage for the whole server in one call, and lists them for WHMCS's server sync. Every
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

/** Seconds for one call: createacct with the whole stack answers in about a second. */
const BERTH_TIMEOUT = 120;
const BERTH_CONNECT_TIMEOUT = 15;
/** A key whose call never got an answer is used again by retries within this time. */
const BERTH_PENDING_SECONDS = 3600;
const BERTH_PENDING_TABLE = 'mod_berth_pending';

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
// Calling Berth

/** A Berth answer: ok, HTTP status, data, info, code (errors), or a transport error. */
function berth_call(array $params, string $operation, array $fields = [], ?string $idempotencyKey = null): array
{
    $host = trim((string) ($params['serverhostname'] ?: $params['serverip']));
    $port = (int) ($params['serverport'] ?? 0) ?: 5555;
    $scheme = ($params['serversecure'] ?? true) === false || ($params['serversecure'] ?? '') === 'off' ? 'http' : 'https';
    $url = sprintf('%s://%s:%d/api/v1/%s/', $scheme, str_contains($host, ':') ? "[$host]" : $host, $port, $operation);
    $headers = [
        'X-API-USER: ' . explode('/', (string) $params['serverusername'], 2)[0],
        'X-API-PASSWORD: ' . $params['serverpassword'],
        'Content-Type: application/x-www-form-urlencoded',
        'Accept: application/json',
    ];
    $reseller = berth_resellerHeader($params);
    if ($reseller !== '') {
        $headers[] = 'X-RESELLER: ' . $reseller;
    }
    if ($idempotencyKey !== null) {
        $headers[] = 'Idempotency-Key: ' . $idempotencyKey;
    }
    $curl = curl_init($url);
    curl_setopt_array($curl, [
        CURLOPT_POST => true,
        CURLOPT_POSTFIELDS => http_build_query($fields),
        CURLOPT_HTTPHEADER => $headers,
        CURLOPT_RETURNTRANSFER => true,
        CURLOPT_CONNECTTIMEOUT => BERTH_CONNECT_TIMEOUT,
        CURLOPT_TIMEOUT => BERTH_TIMEOUT,
        CURLOPT_PROTOCOLS => CURLPROTO_HTTPS | CURLPROTO_HTTP,
    ]);
    try {
        if ($scheme === 'https') {
            berth_verification($curl, $params, $host, $port);
        }
        $body = curl_exec($curl);
        $status = (int) curl_getinfo($curl, CURLINFO_RESPONSE_CODE);
        $error = $body === false ? curl_error($curl) : '';
    } catch (Exception $e) {
        $body = false;
        $status = 0;
        $error = $e->getMessage();
    }
    curl_close($curl);
    $answer = ['ok' => false, 'status' => $status, 'data' => null, 'info' => '', 'code' => null];
    if ($body === false) {
        $answer['info'] = 'Could not reach Berth at ' . $host . ':' . $port . ': ' . $error;
        $answer['transport'] = true;
    } else {
        $decoded = json_decode((string) $body, true);
        if (!is_array($decoded)) {
            $answer['info'] = 'Berth answered HTTP ' . $status . ' with something other than JSON';
            $answer['transport'] = $status >= 500 || $status === 0;
        } else {
            $answer['data'] = $decoded['data'] ?? null;
            $answer['info'] = (string) ($decoded['info'] ?? '');
            $answer['ok'] = $status === 200;
            $answer['code'] = is_array($answer['data']) ? ($answer['data']['code'] ?? null) : null;
            if ($answer['ok']) {
                $answer['code'] = null;
            }
        }
    }
    berth_log($params, $operation, $fields, $answer);
    return $answer;
}

/**
 * A change, with an Idempotency-Key that belongs to this service and action until Berth answers:
 * a call that timed out (or met a 5xx) keeps its key, and the next attempt sends the same one, so
 * Berth answers it from what the first attempt did instead of acting again.
 */
function berth_change(array $params, string $action, string $operation, array $fields): array
{
    $service = (int) $params['serviceid'];
    $key = berth_pendingKey($service, $action, $operation, $fields);
    $answer = berth_call($params, $operation, $fields, $key);
    if (!$answer['ok'] && ($answer['code'] ?? '') === 'invalid_parameter'
        && (($answer['data']['param'] ?? '') === 'Idempotency-Key')) {
        // The unanswered attempt was for other values (the order was edited since): a new call.
        berth_forgetKey($service, $action);
        $key = berth_pendingKey($service, $action, $operation, $fields);
        $answer = berth_call($params, $operation, $fields, $key);
    }
    if (empty($answer['transport']) && $answer['status'] < 500) {
        berth_forgetKey($service, $action);
    }
    return $answer;
}

/**
 * The key of the unanswered attempt of this action on this service, or a new one. Where WHMCS's
 * database cannot be used, the key is derived from the call itself (service, action, values, the
 * hour), which still makes a prompt retry the same call.
 */
function berth_pendingKey(int $service, string $action, string $operation, array $fields): string
{
    try {
        berth_pendingTable();
        $row = Capsule::table(BERTH_PENDING_TABLE)->where('serviceid', $service)->where('action', $action)->first();
        if ($row && (int) ($row->created_at ?? 0) > time() - BERTH_PENDING_SECONDS) {
            return (string) $row->idempotency_key;
        }
        $key = sprintf('whmcs-%d-%s-%s', $service, $action, bin2hex(random_bytes(8)));
        Capsule::table(BERTH_PENDING_TABLE)->where('serviceid', $service)->where('action', $action)->delete();
        Capsule::table(BERTH_PENDING_TABLE)->insert([
            'serviceid' => $service,
            'action' => $action,
            'idempotency_key' => $key,
            'created_at' => time(),
        ]);
        return $key;
    } catch (Throwable $e) {
        $call = hash('sha256', json_encode([$operation, $fields, intdiv(time(), BERTH_PENDING_SECONDS)]));
        return sprintf('whmcs-%d-%s-%s', $service, $action, substr($call, 0, 16));
    }
}

function berth_forgetKey(int $service, string $action): void
{
    try {
        Capsule::table(BERTH_PENDING_TABLE)->where('serviceid', $service)->where('action', $action)->delete();
    } catch (Throwable $e) {
        // no table to forget it in: the derived key changes with the values and the hour
    }
}

function berth_pendingTable(): void
{
    if (Capsule::schema()->hasTable(BERTH_PENDING_TABLE)) {
        return;
    }
    Capsule::schema()->create(BERTH_PENDING_TABLE, function ($table) {
        $table->integer('serviceid');
        $table->string('action', 32);
        $table->string('idempotency_key', 100);
        $table->integer('created_at');
        $table->unique(['serviceid', 'action']);
    });
}

/**
 * Verifies the server's certificate: the system's CA store when the access hash is empty; else
 * the key of the certificate the access hash holds (PEM) or names (SHA-256 fingerprint) is
 * pinned, so a connection to any other key fails before a byte of the request is sent.
 */
function berth_verification($curl, array $params, string $host, int $port): void
{
    $hash = trim((string) ($params['serveraccesshash'] ?? ''));
    if ($hash === '') {
        curl_setopt($curl, CURLOPT_SSL_VERIFYPEER, true);
        curl_setopt($curl, CURLOPT_SSL_VERIFYHOST, 2);
        return;
    }
    if (str_contains($hash, '-----BEGIN CERTIFICATE-----')) {
        $certificate = $hash;
    } else {
        $wanted = strtolower(preg_replace('/[^0-9A-Fa-f]/', '', $hash));
        if (strlen($wanted) !== 64) {
            throw new Exception('The access hash is neither a PEM certificate nor a SHA-256 fingerprint');
        }
        $certificate = berth_fetchCertificate($host, $port);
        if (!hash_equals($wanted, openssl_x509_fingerprint($certificate, 'sha256'))) {
            throw new Exception('The server\'s certificate does not have the SHA-256 fingerprint in the access hash');
        }
    }
    $key = openssl_pkey_get_public($certificate);
    $details = $key === false ? false : openssl_pkey_get_details($key);
    if ($details === false) {
        throw new Exception('The certificate in the access hash cannot be read');
    }
    $der = base64_decode(preg_replace('/-----[^-]+-----|\s+/', '', $details['key']));
    // The pin is the check: curl refuses any other key during the handshake.
    curl_setopt($curl, CURLOPT_PINNEDPUBLICKEY, 'sha256//' . base64_encode(hash('sha256', $der, true)));
    curl_setopt($curl, CURLOPT_SSL_VERIFYPEER, false);
    curl_setopt($curl, CURLOPT_SSL_VERIFYHOST, 0);
}

/** The certificate the server presents (nothing is sent but the TLS handshake). */
function berth_fetchCertificate(string $host, int $port): string
{
    $context = stream_context_create(['ssl' => [
        'capture_peer_cert' => true,
        'verify_peer' => false,
        'verify_peer_name' => false,
        'SNI_enabled' => true,
    ]]);
    $target = sprintf('ssl://%s:%d', str_contains($host, ':') ? "[$host]" : $host, $port);
    $socket = @stream_socket_client($target, $errno, $error, BERTH_CONNECT_TIMEOUT, STREAM_CLIENT_CONNECT, $context);
    if ($socket === false) {
        throw new Exception('TLS handshake failed: ' . $error);
    }
    $peer = stream_context_get_params($socket)['options']['ssl']['peer_certificate'] ?? null;
    fclose($socket);
    if ($peer === null || !openssl_x509_export($peer, $pem)) {
        throw new Exception('The server presented no certificate');
    }
    return $pem;
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

/** WHMCS's module log, with every password masked. */
function berth_log(array $params, string $operation, array $fields, array $answer): void
{
    if (!function_exists('logModuleCall')) {
        return;
    }
    $secrets = array_values(array_filter([
        (string) ($params['serverpassword'] ?? ''),
        (string) ($params['password'] ?? ''),
        (string) ($fields['password'] ?? ''),
    ], 'strlen'));
    unset($fields['password']);
    logModuleCall('berth', $operation, $fields, $answer['info'], $answer, $secrets);
}
