<?php
/**
 * How the Berth module calls Berth: one HTTPS call with the server's certificate verified (or
 * pinned), changes with an Idempotency-Key kept until Berth has answered, and WHMCS's module log
 * with every secret kept out. Loaded by berth.php.
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

/** WHMCS's module log, with every password and single sign-on URL kept out. */
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
    if (is_array($answer['data']) && isset($answer['data']['url'])) {
        // A single sign-on URL lets its holder in: it is kept in no log.
        $answer['data']['url'] = '(single sign-on URL, not logged)';
    }
    logModuleCall('berth', $operation, $fields, $answer['info'], $answer, $secrets);
}
