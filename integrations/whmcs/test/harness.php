<?php
// Calls one function of the Berth module the way WHMCS does, with the $params array WHMCS passes.
// WHMCS itself is not here: the two things of it the module uses are replaced by recording
// stand-ins, the database layer (Capsule, whose tables are kept in a JSON file between calls, so
// that a test can seed tblhosting and see what UsageUpdate wrote) and logModuleCall.
//
//   BERTH_WHMCS_STATE=state.json php harness.php < {"function": "CreateAccount", "params": {...}}
//   ("request": {...} adds the query of the page WHMCS serves, as $_GET and $_REQUEST)
// prints {"result": ..., "exception": null | "message", "log": [this call's log entries]}.

namespace WHMCS\Database {
    final class State
    {
        public static array $data = ['tables' => [], 'log' => []];

        public static function load(): void
        {
            $path = getenv('BERTH_WHMCS_STATE');
            if ($path && is_file($path)) {
                self::$data = json_decode(file_get_contents($path), true) + self::$data;
            }
        }

        public static function save(): void
        {
            $path = getenv('BERTH_WHMCS_STATE');
            if ($path) {
                file_put_contents($path, json_encode(self::$data, JSON_PRETTY_PRINT));
            }
        }
    }

    final class Query
    {
        private array $conditions = [];

        public function __construct(private string $table)
        {
        }

        public function where(string $column, $value): self
        {
            $this->conditions[] = [$column, $value];
            return $this;
        }

        private function matches(array $row): bool
        {
            foreach ($this->conditions as [$column, $value]) {
                if ((string) ($row[$column] ?? '') !== (string) $value) {
                    return false;
                }
            }
            return true;
        }

        private function &rows(): array
        {
            State::$data['tables'][$this->table] ??= [];
            return State::$data['tables'][$this->table];
        }

        public function first(): ?object
        {
            foreach ($this->rows() as $row) {
                if ($this->matches($row)) {
                    return (object) $row;
                }
            }
            return null;
        }

        public function insert(array $row): bool
        {
            $rows = &$this->rows();
            $rows[] = $row;
            return true;
        }

        public function update(array $values): int
        {
            $rows = &$this->rows();
            $n = 0;
            foreach ($rows as &$row) {
                if ($this->matches($row)) {
                    $row = array_merge($row, $values);
                    $n++;
                }
            }
            return $n;
        }

        public function delete(): int
        {
            $rows = &$this->rows();
            $before = count($rows);
            $rows = array_values(array_filter($rows, fn ($row) => !$this->matches($row)));
            return $before - count($rows);
        }
    }

    final class Blueprint
    {
        public function __call(string $name, array $arguments): self
        {
            return $this;
        }
    }

    final class Schema
    {
        public function hasTable(string $table): bool
        {
            return array_key_exists($table, State::$data['tables']);
        }

        public function create(string $table, callable $define): void
        {
            $define(new Blueprint());
            State::$data['tables'][$table] = [];
        }
    }

    // BERTH_WHMCS_ONLY_TBLHOSTING=1: a database layer that knows tblhosting and nothing else, as a
    // minimal stand-in might; the module must still work.
    final class Capsule
    {
        public static function table(string $table): Query
        {
            if (getenv('BERTH_WHMCS_ONLY_TBLHOSTING') && $table !== 'tblhosting') {
                throw new \RuntimeException("no table $table");
            }
            return new Query($table);
        }

        public static function schema(): Schema
        {
            if (getenv('BERTH_WHMCS_ONLY_TBLHOSTING')) {
                throw new \RuntimeException('no schema');
            }
            return new Schema();
        }
    }
}

namespace {
    use WHMCS\Database\State;

    define('WHMCS', true);

    function logModuleCall($module, $action, $request, $response, $processed = '', $replace = [])
    {
        State::$data['log'][] = compact('module', 'action', 'request', 'response', 'processed', 'replace');
    }

    State::load();
    $logged = count(State::$data['log']);
    require __DIR__ . '/../modules/servers/berth/berth.php';
    $call = json_decode(stream_get_contents(STDIN), true);
    // The query of the client area's link (…&dosinglesignon=1&app=email), as PHP gives it.
    $_GET = $call['request'] ?? [];
    $_REQUEST = $_GET;
    $function = 'berth_' . $call['function'];
    $output = ['result' => null, 'exception' => null];
    try {
        $output['result'] = isset($call['params']) ? $function($call['params']) : $function();
    } catch (\Throwable $e) {
        $output['exception'] = $e->getMessage();
    }
    State::save();
    $output['log'] = array_slice(State::$data['log'], $logged);
    echo json_encode($output), "\n";
}
