{* The Berth panel on the service's overview in the client area (berth_ClientArea): "Log in to
   control panel" and a link to each page of the panel. Every link goes through WHMCS's own
   single sign-on (dosinglesignon=1, which calls berth_ServiceSingleSignOn); `app` names the page.
   WHMCS checks that the client may log in to the service before it calls the module. *}
<div class="panel card panel-default mb-3" id="berthPanel">
    <div class="panel-heading card-header">
        <h3 class="panel-title card-title m-0">Control panel</h3>
    </div>
    <div class="panel-body card-body">
        {if $berthActive}
            <p>
                <a class="btn btn-primary" id="berthLogin" target="_blank" rel="noopener"
                   href="clientarea.php?action=productdetails&amp;id={$serviceid|escape:'url'}&amp;dosinglesignon=1">Log in to control panel</a>
            </p>
            <ul class="list-inline mb-0">
                {foreach $berthPages as $page => $label}
                    <li class="list-inline-item">
                        <a target="_blank" rel="noopener"
                           href="clientarea.php?action=productdetails&amp;id={$serviceid|escape:'url'}&amp;dosinglesignon=1&amp;app={$page|escape:'url'}">{$label|escape:'html'}</a>
                    </li>
                {/foreach}
            </ul>
        {else}
            <p class="mb-0">The control panel opens once this service is active.</p>
        {/if}
    </div>
</div>
